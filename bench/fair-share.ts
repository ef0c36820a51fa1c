/**
 * Fair sharing of devices between tenants (issue 19, finding 3): tenant Y's small `gemm` job, each a
 * `POST /v1/jobs?wait` answered when the job has finished, alone (idle) and while tenant X keeps a long
 * job running on the same device (contended) — with the runtime's task-level fair sharing and without
 * it (TANDEM_FAIR_SHARE=0: tasks first come, first served). The service runs in this process on the
 * real runtime (inject(), no socket), so the figures are the service's own.
 *
 *   node dist/bench/fair-share.js [--device cpu|cuda] [--n 160] [--runs 100] [--runs-off 5]
 *     [--x gemm|option|md] [--x-n 1024] [--x-paths 268435456] [--threads N] [--settle-ms 1500] [--gap-ms 100] [--json]
 *
 * Without fair sharing a contended run waits for X's whole job, so only --runs-off runs are made.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { loadServiceConfig } from '../src/service/config.js';
import { openRuntime } from '../src/service/server.js';
import { createService, type Service } from '../src/service/service.js';
import { quantile } from './quantile.js';

export interface FairShareOptions {
  readonly fairShare: boolean;
  readonly backends: readonly string[];
  /** Device of both jobs ('cpu', 'cuda'). */
  readonly device: string;
  /** Y's gemm size. */
  readonly n: number;
  readonly idleRuns: number;
  readonly runs: number;
  /** X's long job, resubmitted whenever it ends so that it runs for the whole contended phase. */
  readonly xJob: { readonly type: string; readonly params: Readonly<Record<string, unknown>> };
  readonly cpuThreads?: number;
  /** How long X runs before Y measures (X's job start submits all its tasks: a transient). */
  readonly settleMs?: number;
  /**
   * Pause between Y's jobs (ms). 0: back to back, Y then uses the device as much as X and fair sharing
   * splits it evenly; with a pause Y is the light user a short-job tenant is, and goes first.
   */
  readonly gapMs?: number;
}

export interface FairShareResult {
  readonly fairShare: boolean;
  /** Y's job latency in ms, submit to finished answer, alone and beside X. */
  readonly idle: readonly number[];
  readonly contended: readonly number[];
  /** X's jobs that finished during the contended phase. */
  readonly xJobsFinished: number;
  /** Event-loop delay (ms) while Y measured alone and beside X: p99 and max. */
  readonly loopDelay: {
    readonly idle: readonly [number, number];
    readonly contended: readonly [number, number];
  };
  /** The service's /metrics lines for device seconds per tenant, at the end. */
  readonly tenantDeviceSeconds: Readonly<Record<string, number>>;
}

type Inject = Service['app']['inject'];

async function call(
  inject: Inject,
  key: string,
  method: 'GET' | 'POST',
  url: string,
  payload?: object,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}` },
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

/** One Y job through ?wait; its latency in ms (throws unless it succeeded). */
async function timedGemm(inject: Inject, key: string, device: string, n: number): Promise<number> {
  const t0 = performance.now();
  const r = await call(inject, key, 'POST', '/v1/jobs?wait=60', {
    type: 'gemm',
    params: { n, dtype: 'f32', device, checkRows: 2 },
  });
  const ms = performance.now() - t0;
  if (process.env['FAIR_DEBUG'])
    console.error(
      `y ${ms.toFixed(1)} ms; server run ${((r.body['runSeconds'] as number) * 1000).toFixed(1)} ms; gemm ${(((r.body['result'] as Record<string, number> | undefined)?.['seconds'] ?? NaN) * 1000).toFixed(1)} ms`,
    );
  if (r.body['state'] !== 'succeeded')
    throw new Error(`Y's gemm ended ${String(r.body['state'])}: ${JSON.stringify(r.body)}`);
  return ms;
}

function parseTenantSeconds(metrics: string, names: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    // tandem_tenant_device_seconds_total{tenant="…",device="…"} v, summed over devices.
    const m = /^tandem_tenant_device_seconds_total\{tenant="([^"]+)",device="[^"]*"\} ([0-9.e+-]+)$/.exec(
      line,
    );
    if (m && names.includes(m[1]!)) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  }
  return out;
}

export async function runFairShare(o: FairShareOptions): Promise<FairShareResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-fair-'));
  const cfg = loadServiceConfig(
    {},
    {
      dataDir: dir,
      logLevel: 'silent',
      durability: 'normal',
      fairShare: o.fairShare,
      maxRunningJobs: 4,
      runtime: {
        enabled: true,
        backends: o.backends,
        cpuThreads: o.cpuThreads ?? loadServiceConfig({}, {}).runtime.cpuThreads,
        calibrate: false,
        cacheDir: join(dir, 'cache'),
      },
    },
  );
  const { rt, reason } = await openRuntime(cfg);
  if (!rt || !rt.devices.some((d) => d.info.kind === o.device || d.info.id === o.device)) {
    const why = rt?.backends.map((b) => `${b.kind}: ${b.available ? 'no such device' : b.reason}`).join('; ');
    await rt?.close();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`no ${o.device} device: ${reason || why || 'not opened'}`);
  }
  const svc = await createService(cfg, { runtime: rt });
  const inject: Inject = svc.app.inject.bind(svc.app);
  const admin = svc.bootstrapKey!.key;
  let stop = false;
  let xFinished = 0;
  let xLoop: Promise<void> = Promise.resolve();
  try {
    const tenant = async (name: string): Promise<string> =>
      (await call(inject, admin, 'POST', '/v1/tenants', { name, maxConcurrentJobs: 4 })).body[
        'key'
      ] as string;
    const x = await tenant('tenant-x');
    const y = await tenant('tenant-y');
    for (let i = 0; i < 5; i++) await timedGemm(inject, y, o.device, o.n); // warm-up (JIT, models)
    const idle: number[] = [];
    const loop = monitorEventLoopDelay({ resolution: 5 });
    const delay = (): [number, number] => [loop.percentile(99) / 1e6, loop.max / 1e6];
    loop.enable();
    const gap = (): Promise<void> => new Promise((r) => setTimeout(r, o.gapMs ?? 0));
    for (let i = 0; i < o.idleRuns; i++) {
      idle.push(await timedGemm(inject, y, o.device, o.n));
      await gap();
    }
    const idleDelay = delay();
    loop.reset();
    // X: one long job after another for as long as Y measures.
    xLoop = (async () => {
      while (!stop) {
        const r = await call(inject, x, 'POST', '/v1/jobs?wait=60', o.xJob);
        if (stop) break;
        if (r.status !== 200 && r.status !== 202)
          throw new Error(`X's job refused: ${JSON.stringify(r.body)}`);
        if (r.body['state'] === 'succeeded') xFinished++;
        else if (r.body['state'] === 'failed') throw new Error(`X's job failed: ${JSON.stringify(r.body)}`);
        else
          while (!stop) {
            const g = await call(inject, x, 'GET', `/v1/jobs/${String(r.body['id'])}`);
            if (g.body['state'] === 'succeeded') xFinished++;
            if (['succeeded', 'failed', 'cancelled'].includes(String(g.body['state']))) break;
            await new Promise((res) => setTimeout(res, 20));
          }
      }
    })();
    // Its failure is reported by the measuring loop's end (below), never left unhandled.
    let xError: unknown = null;
    xLoop = xLoop.catch((e: unknown) => void (xError = e));
    await new Promise((r) => setTimeout(r, o.settleMs ?? 1500)); // X's tasks are on the device
    const contended: number[] = [];
    loop.reset();
    for (let i = 0; i < o.runs; i++) {
      contended.push(await timedGemm(inject, y, o.device, o.n));
      await gap();
    }
    stop = true;
    const contendedDelay = delay();
    loop.disable();
    if (xError) throw xError;
    const metrics = await inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${admin}` },
    });
    return {
      fairShare: o.fairShare,
      idle,
      contended,
      xJobsFinished: xFinished,
      loopDelay: { idle: idleDelay, contended: contendedDelay },
      tenantDeviceSeconds: parseTenantSeconds(metrics.body, ['tenant-x', 'tenant-y']),
    };
  } finally {
    stop = true;
    // X's job still running is abandoned by close (it would re-run after a restart; this dir goes).
    await svc.close();
    await rt.close();
    await xLoop.catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

export function summary(xs: readonly number[]): { p50: number; p99: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: quantile(s, 0.5), p99: quantile(s, 0.99), max: s[s.length - 1] ?? NaN };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      device: { type: 'string', default: 'cpu' },
      n: { type: 'string', default: '160' },
      runs: { type: 'string', default: '100' },
      'runs-off': { type: 'string', default: '5' },
      x: { type: 'string', default: 'gemm' },
      'x-n': { type: 'string', default: '1024' },
      'x-paths': { type: 'string', default: String(2 ** 28) },
      threads: { type: 'string' },
      'settle-ms': { type: 'string', default: '1500' },
      'gap-ms': { type: 'string', default: '100' },
      json: { type: 'boolean', default: false },
    },
  });
  const device = values.device!;
  const backends = device === 'cpu' ? ['cpu'] : ['cpu', device];
  // X: a gemm job submits all its panels at once (a burst of tasks); option and md submit a window
  // of tasks at a time (a cancellation point per task), so FIFO already interleaves them with Y.
  const xJob =
    values.x === 'md'
      ? { type: 'md', params: { preset: 'lj-small', steps: 20000, thermoEvery: 1000, device } }
      : values.x === 'option'
        ? { type: 'option', params: { paths: Number(values['x-paths']), device } }
        : {
            type: 'gemm',
            params: { n: Number(values['x-n']), panels: 64, dtype: 'f32', device, checkRows: 2 },
          };
  const common = {
    backends,
    device,
    n: Number(values.n),
    idleRuns: Number(values.runs),
    xJob,
    ...(values.threads ? { cpuThreads: Number(values.threads) } : {}),
    settleMs: Number(values['settle-ms']),
    gapMs: Number(values['gap-ms']),
  };
  const on = await runFairShare({ ...common, fairShare: true, runs: Number(values.runs) });
  const off = await runFairShare({
    ...common,
    idleRuns: Number(values['runs-off']),
    fairShare: false,
    runs: Number(values['runs-off']),
  });
  const idle = summary(on.idle);
  const rows = [
    { case: 'idle (Y alone)', runs: on.idle.length, ...idle },
    { case: 'contended, fair sharing', runs: on.contended.length, ...summary(on.contended) },
    { case: 'contended, FIFO (TANDEM_FAIR_SHARE=0)', runs: off.contended.length, ...summary(off.contended) },
  ];
  const ratio = summary(on.contended).p99 / idle.p99;
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ xJob, n: common.n, device, rows, ratioP99: ratio, on, off })}\n`,
    );
    return;
  }
  console.log(
    `Y: gemm n=${common.n} on ${device}, ${common.gapMs} ms between jobs; X: ${xJob.type} ${JSON.stringify(xJob.params)}`,
  );
  console.log('case                                    runs   p50 ms   p99 ms   max ms');
  for (const r of rows)
    console.log(
      `${r.case.padEnd(40)}${String(r.runs).padStart(4)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${r.max.toFixed(1).padStart(8)}`,
    );
  console.log(`contended p99 / idle p99 with fair sharing: ${ratio.toFixed(2)} (target <= 2)`);
  console.log(`device seconds by tenant (fair sharing run): ${JSON.stringify(on.tenantDeviceSeconds)}`);
  const d = (x: readonly [number, number]): string => `p99 ${x[0].toFixed(1)} / max ${x[1].toFixed(1)} ms`;
  console.log(
    `event-loop delay, fair sharing run: idle ${d(on.loopDelay.idle)}; contended ${d(on.loopDelay.contended)}`,
  );
  console.log(`X jobs finished while Y measured: ${on.xJobsFinished}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
