/**
 * A closed-loop load generator for the interactive lane (perf_analyzer's concurrency mode): N clients,
 * each on its own keep-alive connection, each sending its next infer request as soon as the previous
 * one is answered. A warm-up, then a measured window (by time or by request count); the report has
 * infer/s, the client's latency percentiles, the server's split from `Server-Timing`, the executed
 * batch sizes from `x-tandem-batch-size` and errors by status. Used by `tandem perf` and the benches.
 */
import http from 'node:http';
import https from 'node:https';
import { TandemError } from '../../core/errors.js';
import { parseServerTiming, Samples, type LatencySummary, type ServerSplit } from './load-stats.js';

export { parseConcurrency, parseServerTiming, type LatencySummary } from './load-stats.js';

export interface LoadTarget {
  /** Service base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly key: string | null;
  readonly model: string;
  readonly version?: number;
}

/** One request to send: its JSON body, a label to report it under, and a client-side abort. */
export interface LoadRequest {
  /** A JSON body, or (with `headers` naming its content type) a binary one. */
  readonly body: string | Uint8Array;
  /** Extra request headers, e.g. a binary tensor body's content-type and Inference-Header-Content-Length. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Latencies are also reported per label (e.g. 'high' / 'low' priority). */
  readonly label?: string;
  /** Abandon the request (close its connection) this long after sending it: a client that gives up. */
  readonly abortAfterMs?: number;
}

export interface LoadOptions {
  readonly concurrency: number;
  /** The i-th request (i counts from 0 over all clients, warm-up included). */
  readonly request: (i: number) => LoadRequest;
  /** Warm-up before measuring (default 1 s; requests answered in it are not counted). */
  readonly warmupSeconds?: number;
  /** The measured window (default 5 s). */
  readonly seconds?: number;
  /** Stop after this many measured requests (sent after the warm-up), if that comes before `seconds`. */
  readonly requests?: number;
  /**
   * Keep the samples themselves in `report.raw` (to merge the reports of several generators, or to line
   * requests up with a profile: each successful request's send and answer times).
   */
  readonly raw?: boolean;
}

/** The samples behind a report (ms), and each successful request's [sent, answered] in µs of CLOCK_MONOTONIC. */
export interface LoadRaw {
  client: Float64Array;
  queue: Float64Array;
  compute: Float64Array;
  serialize: Float64Array;
  request: Float64Array;
  labels: Record<string, Float64Array>;
  labelQueues: Record<string, Float64Array>;
  /** Flat [sentUs, answeredUs, ...] (process.hrtime's clock, the one V8's CPU profiles use on Linux). */
  windowsUs: Float64Array;
}

export interface SplitSummary {
  mean: number;
  p99: number;
}

export interface LoadReport {
  concurrency: number;
  /** Requests sent in the measured window and answered (any status) or aborted. */
  requests: number;
  /** Requests sent during the warm-up (not measured). */
  warmupRequests: number;
  seconds: number;
  /** Successful (2xx) answers per second over the window. */
  inferPerSec: number;
  /** Latency of successful requests, ms. */
  client: LatencySummary;
  /** The server's own split of successful requests (ms), from Server-Timing. */
  server: { queue: SplitSummary; compute: SplitSummary; serialize: SplitSummary; request: SplitSummary };
  /** Batch size the server ran each successful request in → how many requests. */
  batchSizes: Record<string, number>;
  /** Failures by HTTP status, 'network' (no answer) or 'aborted' (the client gave up). */
  errors: Record<string, number>;
  /** Successful latencies per request label. */
  labels: Record<string, LatencySummary>;
  /** The server's queue time (Server-Timing) of successful requests per label: the batcher's share. */
  labelQueues: Record<string, LatencySummary>;
  /** With `raw`: the samples themselves. */
  raw?: LoadRaw;
}

interface Answer {
  status: number | 'network' | 'aborted';
  timing: string | undefined;
  batchSize: string | undefined;
}

class Recorder {
  readonly client = new Samples();
  readonly queue = new Samples();
  readonly compute = new Samples();
  readonly serialize = new Samples();
  readonly request = new Samples();
  readonly labels = new Map<string, Samples>();
  readonly labelQueues = new Map<string, Samples>();
  readonly batchSizes: Record<string, number> = {};
  readonly errors: Record<string, number> = {};
  readonly windows = new Samples();
  requests = 0;
  private readonly split: ServerSplit = { queue: NaN, compute: NaN, serialize: NaN, request: NaN };

  record(a: Answer, ms: number, label: string | undefined, window?: readonly [number, number]): void {
    this.requests++;
    if (typeof a.status !== 'number' || a.status < 200 || a.status >= 300) {
      const k = String(a.status);
      this.errors[k] = (this.errors[k] ?? 0) + 1;
      return;
    }
    this.client.push(ms);
    if (window) {
      this.windows.push(window[0]);
      this.windows.push(window[1]);
    }
    if (label !== undefined) {
      let s = this.labels.get(label);
      if (!s) this.labels.set(label, (s = new Samples()));
      s.push(ms);
    }
    if (parseServerTiming(a.timing, this.split)) {
      if (!Number.isNaN(this.split.queue)) {
        this.queue.push(this.split.queue);
        if (label !== undefined) {
          let q = this.labelQueues.get(label);
          if (!q) this.labelQueues.set(label, (q = new Samples()));
          q.push(this.split.queue);
        }
      }
      if (!Number.isNaN(this.split.compute)) this.compute.push(this.split.compute);
      if (!Number.isNaN(this.split.serialize)) this.serialize.push(this.split.serialize);
      if (!Number.isNaN(this.split.request)) this.request.push(this.split.request);
    }
    if (a.batchSize !== undefined) this.batchSizes[a.batchSize] = (this.batchSizes[a.batchSize] ?? 0) + 1;
  }
}

function inferPath(t: LoadTarget): string {
  const name = encodeURIComponent(t.model);
  return t.version === undefined
    ? `/v1/models/${name}/infer`
    : `/v1/models/${name}/versions/${t.version}/infer`;
}

/** Sends one request on the agent; never rejects (a failure is an Answer). */
function send(
  mod: typeof http | typeof https,
  agent: http.Agent,
  url: URL,
  path: string,
  key: string | null,
  r: LoadRequest,
): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Answer): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(a);
    };
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': typeof r.body === 'string' ? Buffer.byteLength(r.body) : r.body.byteLength,
      ...r.headers,
    };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const req = mod.request(
      { agent, method: 'POST', hostname: url.hostname, port: url.port, path, headers },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => {
          const timing = res.headers['server-timing'];
          const bs = res.headers['x-tandem-batch-size'];
          finish({
            status: res.statusCode ?? 0,
            timing: Array.isArray(timing) ? timing.join(', ') : timing,
            batchSize: Array.isArray(bs) ? bs[0] : bs,
          });
        });
        res.on('error', () => finish({ status: 'network', timing: undefined, batchSize: undefined }));
      },
    );
    const timer =
      r.abortAfterMs === undefined
        ? null
        : setTimeout(() => {
            finish({ status: 'aborted', timing: undefined, batchSize: undefined });
            req.destroy();
          }, r.abortAfterMs);
    req.on('error', () => finish({ status: 'network', timing: undefined, batchSize: undefined }));
    req.end(r.body);
  });
}

function split(s: Samples): SplitSummary {
  const x = s.summary();
  return { mean: x.mean, p99: x.p99 };
}

/** Runs one concurrency level: warm-up, then the measured window. */
export async function runLoad(target: LoadTarget, opts: LoadOptions): Promise<LoadReport> {
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'concurrency must be an integer >= 1', {
      field: 'concurrency',
    });
  }
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `not a URL: ${target.url}`, { field: 'url' });
  }
  const mod = url.protocol === 'https:' ? https : http;
  const agent = new mod.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const path = `${url.pathname.replace(/\/+$/, '')}${inferPath(target)}`;
  const rec = new Recorder();
  const t0 = performance.now();
  const measureFrom = t0 + 1000 * (opts.warmupSeconds ?? 1);
  const measureTo = measureFrom + 1000 * (opts.seconds ?? 5);
  const limit = opts.requests ?? Infinity;
  let next = 0;
  let started = 0; // measured requests sent
  let lastEnd = measureFrom;
  const client = async (): Promise<void> => {
    for (;;) {
      const now = performance.now();
      if (now >= measureTo) return;
      const measured = now >= measureFrom;
      if (measured && started >= limit) return;
      if (measured) started++;
      const r = opts.request(next++);
      const sentUs = opts.raw ? monotonicUs() : 0;
      const a = await send(mod, agent, url, path, target.key, r);
      const end = performance.now();
      if (measured) {
        rec.record(a, end - now, r.label, opts.raw ? [sentUs, monotonicUs()] : undefined);
        if (end > lastEnd) lastEnd = end;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.concurrency }, client));
  } finally {
    agent.destroy();
  }
  // Every recorded request ended by lastEnd (a request sent before measureTo may end after it).
  const seconds = Math.max(1e-9, (lastEnd - measureFrom) / 1000);
  const labels: Record<string, LatencySummary> = {};
  for (const [k, s] of rec.labels) labels[k] = s.summary();
  const labelQueues: Record<string, LatencySummary> = {};
  for (const [k, s] of rec.labelQueues) labelQueues[k] = s.summary();
  const report: LoadReport = {
    concurrency: opts.concurrency,
    requests: rec.requests,
    warmupRequests: next - started,
    seconds,
    inferPerSec: rec.client.length / seconds,
    client: rec.client.summary(),
    server: {
      queue: split(rec.queue),
      compute: split(rec.compute),
      serialize: split(rec.serialize),
      request: split(rec.request),
    },
    batchSizes: rec.batchSizes,
    errors: rec.errors,
    labels,
    labelQueues,
  };
  if (opts.raw) report.raw = rawOf(rec);
  return report;
}

/** µs of CLOCK_MONOTONIC (process.hrtime's clock: the one V8's CPU profiles and other threads share). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

function rawOf(rec: Recorder): LoadRaw {
  const each = (m: Map<string, Samples>): Record<string, Float64Array> =>
    Object.fromEntries([...m].map(([k, s]) => [k, s.values()]));
  return {
    client: rec.client.values(),
    queue: rec.queue.values(),
    compute: rec.compute.values(),
    serialize: rec.serialize.values(),
    request: rec.request.values(),
    labels: each(rec.labels),
    labelQueues: each(rec.labelQueues),
    windowsUs: rec.windows.values(),
  };
}

/**
 * One report from the reports of generators that ran side by side (each with `raw`), e.g. one per
 * thread: concurrency, requests and throughput add up, percentiles come from the pooled samples.
 */
export function mergeLoadReports(parts: readonly LoadReport[]): LoadReport {
  const pool = (pick: (r: LoadRaw) => Float64Array | undefined): Samples => {
    const s = new Samples();
    for (const p of parts) {
      const xs = p.raw ? pick(p.raw) : undefined;
      if (xs) s.pushAll(xs);
    }
    return s;
  };
  if (parts.some((p) => !p.raw)) throw new Error('mergeLoadReports: every report needs raw samples');
  const labelNames = new Set(parts.flatMap((p) => Object.keys(p.raw!.labels)));
  const labels: Record<string, LatencySummary> = {};
  const labelQueues: Record<string, LatencySummary> = {};
  for (const k of labelNames) {
    labels[k] = pool((r) => r.labels[k]).summary();
    labelQueues[k] = pool((r) => r.labelQueues[k]).summary();
  }
  const add = (pick: (r: LoadReport) => Record<string, number>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const p of parts) for (const [k, v] of Object.entries(pick(p))) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  const client = pool((r) => r.client);
  return {
    concurrency: parts.reduce((n, p) => n + p.concurrency, 0),
    requests: parts.reduce((n, p) => n + p.requests, 0),
    warmupRequests: parts.reduce((n, p) => n + p.warmupRequests, 0),
    seconds: Math.max(...parts.map((p) => p.seconds)),
    inferPerSec: parts.reduce((n, p) => n + p.inferPerSec, 0),
    client: client.summary(),
    server: {
      queue: split(pool((r) => r.queue)),
      compute: split(pool((r) => r.compute)),
      serialize: split(pool((r) => r.serialize)),
      request: split(pool((r) => r.request)),
    },
    batchSizes: add((r) => r.batchSizes),
    errors: add((r) => r.errors),
    labels,
    labelQueues,
  };
}

/** Runs each concurrency level in turn (perf_analyzer's sweep), reporting each as it finishes. */
export async function runSweep(
  target: LoadTarget,
  levels: readonly number[],
  opts: Omit<LoadOptions, 'concurrency'>,
  onLevel?: (r: LoadReport) => void,
): Promise<LoadReport[]> {
  const out: LoadReport[] = [];
  for (const concurrency of levels) {
    const r = await runLoad(target, { ...opts, concurrency });
    onLevel?.(r);
    out.push(r);
  }
  return out;
}

/**
 * Request bodies from a JSON input file: a full body ({inputs, priority?, timeoutMs?}), bare inputs
 * (wrapped as {inputs}), or an array of either (sent in turn).
 */
export function bodiesFromJson(json: unknown): string[] {
  const one = (x: unknown): string =>
    JSON.stringify(
      x !== null && typeof x === 'object' && !Array.isArray(x) && 'inputs' in x ? x : { inputs: x },
    );
  if (Array.isArray(json)) {
    if (json.length === 0) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'the input file holds an empty array', {
        field: 'input',
      });
    }
    return json.map(one);
  }
  return [one(json)];
}
