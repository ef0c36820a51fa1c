/** `tandem perf <model>`: the load generator (service/client/load.ts) over a concurrency sweep. */
import { readFile } from 'node:fs/promises';
import { TandemError } from '../core/errors.js';
import { bodiesFromJson, parseConcurrency, runSweep, type LoadReport } from '../service/client/load.js';
import { runSweepIsolated } from '../service/client/load-threads.js';
import { reportError } from './output.js';
import { clientConfig } from './service-client.js';

export interface PerfOptions {
  readonly json?: boolean;
  readonly concurrency: string;
  readonly input?: string;
  readonly seconds: number;
  readonly warmup: number;
  /** Client threads (default 1: the clients on this process's event loop). */
  readonly threads?: number;
  readonly modelVersion?: number;
  readonly url?: string;
  readonly key?: string;
}

async function readBodies(file: string | undefined): Promise<string[]> {
  if (file === undefined) return ['{"inputs":{}}'];
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new TandemError(
      'TANDEM_ERR_NOT_FOUND',
      `cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  try {
    return bodiesFromJson(JSON.parse(text));
  } catch (e) {
    if (e instanceof TandemError) throw e;
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${file} is not JSON`, { field: 'input' });
  }
}

const f2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');

/** One line per level, as perf_analyzer prints its sweep. */
export function formatLevel(r: LoadReport): string {
  const sizes = Object.entries(r.batchSizes)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  const errors = Object.entries(r.errors)
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  return (
    `concurrency ${r.concurrency}: ${r.inferPerSec.toFixed(1)} infer/s, ` +
    `latency p50 ${f2(r.client.p50)} p95 ${f2(r.client.p95)} p99 ${f2(r.client.p99)} ms; ` +
    `server queue ${f2(r.server.queue.mean)} compute ${f2(r.server.compute.mean)} serialize ${f2(r.server.serialize.mean)} ms (means); ` +
    `batch sizes ${sizes || '-'}${errors ? `; errors ${errors}` : ''}`
  );
}

export async function perfCommand(model: string, opts: PerfOptions): Promise<number> {
  const json = opts.json === true;
  try {
    const levels = parseConcurrency(opts.concurrency);
    if (!(opts.seconds > 0) || !(opts.warmup >= 0)) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', '--seconds must be > 0 and --warmup >= 0', {
        field: 'seconds',
      });
    }
    const bodies = await readBodies(opts.input);
    const cfg = clientConfig({ url: opts.url, key: opts.key });
    const target = {
      url: cfg.url,
      key: cfg.key,
      model,
      ...(opts.modelVersion !== undefined ? { version: opts.modelVersion } : {}),
    };
    const onLevel = (r: LoadReport): void => {
      if (!json) process.stdout.write(`${formatLevel(r)}\n`);
    };
    const window = { seconds: opts.seconds, warmupSeconds: opts.warmup };
    const threads = opts.threads ?? 1;
    const reports =
      threads > 1
        ? await runSweepIsolated(
            target,
            levels,
            window,
            bodies.map((body) => ({ body })),
            onLevel,
            threads,
          )
        : await runSweep(
            target,
            levels,
            { ...window, request: (i) => ({ body: bodies[i % bodies.length]! }) },
            onLevel,
          );
    if (json) process.stdout.write(`${JSON.stringify({ model, levels: reports })}\n`);
    return reports.some((r) => r.client.count === 0) ? 1 : 0;
  } catch (e) {
    return reportError(e, json);
  }
}
