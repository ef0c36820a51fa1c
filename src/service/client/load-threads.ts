/**
 * The load generator in worker threads. For the lane benches, which start the service in their own
 * process, so that the clients do not share the server's event loop (a request's client latency is then
 * the server's, not the server's plus the time the generator's own callbacks waited behind it); for
 * `tandem perf --threads n`, so that one client thread is not the limit at high request rates. The
 * bodies are made beforehand and cycled (a function cannot cross to a worker).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import {
  mergeLoadReports,
  runLoad,
  type LoadOptions,
  type LoadReport,
  type LoadRequest,
  type LoadTarget,
} from './load.js';

interface Job {
  /** Marks the worker data as ours (other workers importing this module run nothing). */
  readonly tandemLoadJob: true;
  readonly target: LoadTarget;
  readonly options: Omit<LoadOptions, 'request'>;
  readonly requests: readonly LoadRequest[];
}

/**
 * The benches' generator threads: LOAD_THREADS (default 1). One Node thread of HTTP clients tops out near
 * 10^4 requests a second, so at high concurrency one generator thread can be what is measured
 * (perf_analyzer's client is multi-threaded C++); with n > 1 the clients are spread over n threads
 * and their samples pooled.
 */
export function loadThreads(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env['LOAD_THREADS'] ?? 1);
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/**
 * Runs `runLoad` in worker threads over `requests` (request i is `requests[i % length]`): `threads`
 * (default loadThreads()) workers, never more than the concurrency, each with its share of the clients
 * and of the request count.
 */
export async function runLoadIsolated(
  target: LoadTarget,
  options: Omit<LoadOptions, 'request'>,
  requests: readonly LoadRequest[],
  threads = loadThreads(),
): Promise<LoadReport> {
  const n = Math.max(1, Math.min(threads, options.concurrency));
  if (n === 1) return runOneWorker(target, options, requests);
  const share = (total: number, i: number): number => Math.floor(total / n) + (i < total % n ? 1 : 0);
  const parts = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      runOneWorker(
        target,
        {
          ...options,
          concurrency: share(options.concurrency, i),
          ...(options.requests === undefined ? {} : { requests: share(options.requests, i) }),
          raw: true,
        },
        requests,
      ),
    ),
  );
  // The pooled report carries no raw samples (windows of several threads are not one sequence).
  return mergeLoadReports(parts);
}

function runOneWorker(
  target: LoadTarget,
  options: Omit<LoadOptions, 'request'>,
  requests: readonly LoadRequest[],
): Promise<LoadReport> {
  if (requests.length === 0) return Promise.reject(new Error('runLoadIsolated: no requests'));
  const job: Job = { tandemLoadJob: true, target, options, requests };
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), { workerData: job });
    let report: LoadReport | null = null;
    w.once('message', (m: LoadReport) => (report = m));
    w.once('error', reject);
    w.once('exit', (code) => {
      if (report !== null) resolve(report);
      else reject(new Error(`load worker exited with code ${code} and no report`));
    });
  });
}

/** runSweep's levels one after another, each in its own worker (perf_analyzer's concurrency sweep). */
export async function runSweepIsolated(
  target: LoadTarget,
  levels: readonly number[],
  options: Omit<LoadOptions, 'request' | 'concurrency'>,
  requests: readonly LoadRequest[],
  onLevel?: (r: LoadReport) => void,
  threads = loadThreads(),
): Promise<LoadReport[]> {
  const out: LoadReport[] = [];
  for (const concurrency of levels) {
    const r = await runLoadIsolated(target, { ...options, concurrency }, requests, threads);
    onLevel?.(r);
    out.push(r);
  }
  return out;
}

const job = isMainThread ? null : (workerData as Partial<Job> | null);
if (job?.tandemLoadJob === true && parentPort !== null) {
  const port = parentPort;
  const { target, options, requests } = job as Job;
  const n = requests.length;
  runLoad(target, { ...options, request: (i) => requests[i % n]! }).then(
    (r) => port.postMessage(r),
    (e: unknown) => {
      throw e instanceof Error ? e : new Error(String(e));
    },
  );
}
