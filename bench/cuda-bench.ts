/**
 * CUDA benchmarks beside PyTorch (bench/cuda_torch.py, run first in the same script so they never
 * share the GPU): GEMM through rt.submit with data resident, 1 GiB upload/download against pinned
 * copies, a 16-chunk copy/compute/copy pipeline, and tiny-kernel rates (runtime, raw queue, graph).
 *   node dist/bench/cuda-bench.js [--n 8192] [--only launch,gemm,copies,pipeline,tiny] [--json out.json]
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { intOption, parse } from '../src/cli/output.js';
import type { DType } from '../src/core/dtype.js';
import { fillRandom } from '../src/core/seeded-random.js';
import type { CudaDevice } from '../src/devices/cuda/cuda-device.js';
import type { CudaKernelImpl } from '../src/devices/cuda/kernel-api.js';
import type { LaunchArg, Scalars } from '../src/devices/device.js';
import { KERNEL_IMPLS } from '../src/kernels/register.js';
import { HostNode } from '../src/memory/host-node.js';
import { Runtime } from '../src/runtime/runtime.js';

type Row = { what: string; tandem: number; baseline: number; unit: string; target: string };
const rows: Row[] = [];
const fmt = (r: Row): string =>
  `| ${r.what} | ${r.tandem.toFixed(2)} | ${r.baseline.toFixed(2)} | ${(r.tandem / r.baseline).toFixed(3)} | ${r.target} |`;
/** Rows are printed as they are measured too, so a crash later loses nothing. */
const addRow = (r: Row): void => {
  rows.push(r);
  console.log(`row: ${fmt(r)}`);
};
const notes: string[] = [];
const note = (n: string): void => {
  notes.push(n);
  console.log(`note: ${n}`);
};
// --json names the file to write (not the CLI's boolean --json).
const { values } = parse(process.argv.slice(2), {
  n: { type: 'string' },
  only: { type: 'string', default: '' },
  cache: { type: 'string', default: '.tandem/cache' },
  json: { type: 'string' },
});
const N = intOption(values['n'], 'n', 8192, 1, 1 << 16);
/** --only a,b runs some sections: launch, gemm, copies, pipeline, tiny. */
const only = String(values['only']).split(',').filter(Boolean);
const want = (name: string): boolean => only.length === 0 || only.includes(name);
const impl = (op: string): unknown => KERNEL_IMPLS.find((e) => e.op === op && e.backend === 'cuda')!.impl;
let taskId = 1 << 24;
const launch = (d: CudaDevice, op: string, args: readonly LaunchArg[], scalars: Scalars): Promise<void> =>
  new Promise((res, rej) =>
    d.queues[0]!.launch({ taskId: taskId++, op, impl: impl(op), args, scalars, after: [] }, (e) =>
      e ? rej(e) : res(),
    ),
  );
const cb = (fn: (done: (e: Error | null) => void) => void): Promise<void> =>
  new Promise((res, rej) => fn((e) => (e ? rej(e) : res())));

function torchBaseline(parts: string[]): Record<string, number> {
  const r = spawnSync('python3', ['bench/cuda_torch.py', String(N), parts.join(',')], { encoding: 'utf8' });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as Record<string, number>;
  } catch {
    note(`torch baseline failed: ${r.stderr.slice(-500)}`);
    return {};
  }
}

async function gemmThroughRuntime(
  rt: Runtime,
  dtype: DType,
  precision: 'default' | 'tf32',
  reps: number,
): Promise<number> {
  const rand = (n: number, seed: number): Float32Array => fillRandom(new Float32Array(n), seed, -0.5, 0.5);
  const a = rt.tensor([N, N], dtype, rand(N * N, 1));
  const b = rt.tensor([N, N], dtype, rand(N * N, 2));
  const c = rt.tensor([N, N], dtype);
  const scalars = { alpha: 1, beta: 0, transA: false, transB: false, precision };
  await rt.submit({ kernel: 'gemm', args: { a, b, c }, scalars, device: 'cuda' }).done; // moves a, b to the GPU
  const t0 = performance.now();
  const tasks = [];
  for (let i = 0; i < reps; i++)
    tasks.push(rt.submit({ kernel: 'gemm', args: { a, b, c }, scalars, device: 'cuda' }).done);
  await Promise.all(tasks);
  const s = (performance.now() - t0) / 1000;
  for (const t of [a, b, c]) rt.free(t);
  return (2 * N ** 3 * reps) / s;
}

async function copies(d: CudaDevice, host: HostNode, torch: Record<string, number>): Promise<void> {
  const bytes = 1 << 30;
  const h = host.alloc(bytes);
  new Uint8Array(h.sab).fill(7);
  const buf = d.node.alloc(bytes);
  await cb((done) => d.upload(h, buf, bytes, done)); // registers the SAB
  const time = async (fn: () => Promise<void>, reps: number): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) await fn();
    return (performance.now() - t0) / 1000 / reps;
  };
  const up = bytes / (await time(() => cb((done) => d.upload(h, buf, bytes, done)), 5));
  const down = bytes / (await time(() => cb((done) => d.download(buf, h, bytes, done)), 5));
  const cal = d.info.details;
  const pinnedUp = Math.max(Number(cal['h2dBandwidth'] ?? 0), torch['h2d_pinned'] ?? 0);
  const pinnedDown = Math.max(Number(cal['d2hBandwidth'] ?? 0), torch['d2h_pinned'] ?? 0);
  addRow({
    what: 'upload 1 GiB (GB/s)',
    tandem: up / 1e9,
    baseline: pinnedUp / 1e9,
    unit: 'GB/s',
    target: '>=0.9',
  });
  addRow({
    what: 'download 1 GiB (GB/s)',
    tandem: down / 1e9,
    baseline: pinnedDown / 1e9,
    unit: 'GB/s',
    target: '>=0.9',
  });
  note(
    `registered SABs ${d.transfers.stats.registered}, registration failures ${d.transfers.stats.registerFailures} ${d.transfers.stats.lastRegisterFailure ?? ''}`,
  );
  d.node.free(buf);
}

async function pipeline(d: CudaDevice, host: HostNode, torch: Record<string, number>): Promise<void> {
  const chunks = 16;
  const bytes = 64 << 20;
  const n = bytes / 4;
  const desc = { shape: [n], dtype: 'f32' as const, bytes };
  const hs = Array.from({ length: chunks }, () => host.alloc(bytes));
  const outs = Array.from({ length: chunks }, () => host.alloc(bytes));
  const bufs = Array.from({ length: chunks }, () => d.node.alloc(bytes));
  const kernel = (i: number): Promise<void> =>
    launch(
      d,
      'unary',
      [
        { buffer: bufs[i]!, desc },
        { buffer: bufs[i]!, desc },
      ],
      { op: 'sin' },
    );
  // Host-observed finish times (ms from the start) of each chunk's stages in the last run.
  const seen = bufs.map(() => ({ h2d: 0, kernel: 0, d2h: 0 }));
  // Each engine's busy time inside a run, from timing events recorded on its stream around every
  // operation (the stream runs them in order, so end - start is the operation's own duration).
  const drv = d.context.driver;
  const streams = {
    h2d: d.context.streams.h2d,
    kernel: d.context.streams.compute,
    d2h: d.context.streams.d2h,
  };
  const events: { stage: keyof typeof streams; start: number; end: number }[] = [];
  const timed = async (stage: keyof typeof streams, fn: () => Promise<void>, on: boolean): Promise<void> => {
    if (!on) return fn();
    d.context.makeCurrent();
    const start = drv.out1('cuEventCreate', (o) => drv.api.cuEventCreate(o, 0));
    const end = drv.out1('cuEventCreate', (o) => drv.api.cuEventCreate(o, 0));
    drv.check(drv.api.cuEventRecord(start, streams[stage]), 'cuEventRecord');
    const p = fn();
    drv.check(drv.api.cuEventRecord(end, streams[stage]), 'cuEventRecord');
    events.push({ stage, start, end });
    await p;
  };
  const run = async (stage: 'all' | 'h2d' | 'kernel' | 'd2h', timeEngines = false): Promise<number> => {
    const t0 = performance.now();
    await Promise.all(
      bufs.map(async (b, i) => {
        if (stage === 'all' || stage === 'h2d')
          await timed('h2d', () => cb((done) => d.upload(hs[i]!, b, bytes, done)), timeEngines);
        seen[i]!.h2d = performance.now() - t0;
        if (stage === 'all' || stage === 'kernel') await timed('kernel', () => kernel(i), timeEngines);
        seen[i]!.kernel = performance.now() - t0;
        if (stage === 'all' || stage === 'd2h')
          await timed('d2h', () => cb((done) => d.download(b, outs[i]!, bytes, done)), timeEngines);
        seen[i]!.d2h = performance.now() - t0;
      }),
    );
    return performance.now() - t0;
  };
  await run('all'); // warm-up: registers every SAB, compiles the kernel
  const engines = { h2d: await run('h2d'), kernel: await run('kernel'), d2h: await run('d2h') };
  const total = await run('all');
  const timedTotal = await run('all', true);
  const busy = { h2d: 0, kernel: 0, d2h: 0 };
  for (const e of events) {
    const ms: [number] = [0];
    drv.check(drv.api.cuEventElapsedTime_v2(ms, e.start, e.end), 'cuEventElapsedTime');
    busy[e.stage] += ms[0];
    drv.api.cuEventDestroy_v2(e.start);
    drv.api.cuEventDestroy_v2(e.end);
  }
  const busiestInRun = Math.max(busy.h2d, busy.kernel, busy.d2h);
  note(
    `pipeline engines busy inside one run (event-timed): h2d ${busy.h2d.toFixed(1)} ms, kernel ${busy.kernel.toFixed(1)} ms, d2h ${busy.d2h.toFixed(1)} ms; that run took ${timedTotal.toFixed(1)} ms = ${(timedTotal / busiestInRun).toFixed(3)}x its busiest engine`,
  );
  if (torch['pipeline_total_ms']) {
    const tb = Math.max(torch['pipeline_h2d_ms']!, torch['pipeline_kernel_ms']!, torch['pipeline_d2h_ms']!);
    note(
      `PyTorch, same pipeline on three event-chained streams: total ${torch['pipeline_total_ms'].toFixed(1)} ms, engines alone h2d ${torch['pipeline_h2d_ms']!.toFixed(1)} / kernel ${torch['pipeline_kernel_ms']!.toFixed(1)} / d2h ${torch['pipeline_d2h_ms']!.toFixed(1)} ms = ${(torch['pipeline_total_ms'] / tb).toFixed(3)}x its busiest engine alone`,
    );
    addRow({
      what: '16-chunk pipeline total, Tandem / PyTorch (ms)',
      tandem: total,
      baseline: torch['pipeline_total_ms'],
      unit: 'ms',
      target: 'report',
    });
  }
  const busiest = Math.max(engines.h2d, engines.kernel, engines.d2h);
  addRow({
    what: '16-chunk pipeline total / busiest engine',
    tandem: total / busiest,
    baseline: 1,
    unit: 'x',
    target: '<=1.15',
  });
  note(
    `pipeline ms: total ${total.toFixed(1)}, h2d ${engines.h2d.toFixed(1)}, kernel ${engines.kernel.toFixed(1)}, d2h ${engines.d2h.toFixed(1)}`,
  );
  const at = (x: { h2d: number; kernel: number; d2h: number }): string =>
    `${x.h2d.toFixed(2)}/${x.kernel.toFixed(2)}/${x.d2h.toFixed(2)}`;
  note(`pipeline chunks seen done (ms, h2d/kernel/d2h): ${seen.map(at).join(' ')}`);
  for (const b of bufs) d.node.free(b);
}

async function tiny(rt: Runtime, d: CudaDevice): Promise<void> {
  // Raw queue (what the runtime calls) and graph replay.
  const buf = d.node.alloc(1024);
  const desc = { shape: [256], dtype: 'f32' as const, bytes: 1024 };
  const t0 = performance.now();
  const ps: Promise<void>[] = [];
  for (let i = 0; i < 100_000; i++) ps.push(launch(d, 'scale', [{ buffer: buf, desc }], { alpha: 1 }));
  await Promise.all(ps);
  note(`raw compute-queue launches: ${(100_000 / ((performance.now() - t0) / 1000)).toFixed(0)}/s`);
  const scale = impl('scale') as CudaKernelImpl;
  const graph = d.captureGraph((run) => {
    for (let i = 0; i < 1000; i++) run(scale, [{ ptr: buf.ptr, desc }], { alpha: 1 });
  });
  await cb((done) => graph.launch(done, 2));
  const g0 = performance.now();
  await cb((done) => graph.launch(done, 200));
  addRow({
    what: 'graph replay (kernels/s)',
    tandem: 200_000 / ((performance.now() - g0) / 1000),
    baseline: 500_000,
    unit: '/s',
    target: '>=500k',
  });
  graph.destroy();
  d.node.free(buf);
  // Through the runtime: a dependency chain of small in-place kernels on one tensor.
  const x = rt.tensor([256], 'f32', new Float32Array(256).fill(1));
  // Make x resident first: a chain whose head waits for an upload is forwarded recursively by the
  // executor when the head launches (see RESULTS.md), which overflows the stack for long chains.
  await rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 }, device: 'cuda' }).done;
  const chain = async (count: number): Promise<number> => {
    const t0 = performance.now();
    let last: Promise<unknown> = Promise.resolve();
    for (let i = 0; i < count; i++)
      last = rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 }, device: 'cuda' }).done;
    await last;
    await rt.idle();
    return count / ((performance.now() - t0) / 1000);
  };
  await chain(5000);
  addRow({
    what: 'tiny-kernel chain via rt.submit (tasks/s)',
    tandem: await chain(100_000),
    baseline: 150_000,
    unit: '/s',
    target: '>=150k',
  });
  const noops = async (count: number): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < count; i++) rt.submit({ kernel: 'noop', device: 'cuda' });
    await rt.idle();
    return count / ((performance.now() - t0) / 1000);
  };
  await noops(5000);
  note(`independent noop kernels via rt.submit: ${(await noops(100_000)).toFixed(0)}/s`);
}

/** Host-side cost of the driver calls on the launch path (no runtime): launch, event record, query. */
async function launchCosts(d: CudaDevice): Promise<void> {
  const drv = d.context.driver;
  const stream = d.context.streams.compute;
  const noop = impl('noop') as CudaKernelImpl & { kind: 'program' };
  d.launcher.launchProgram(noop, [], {}, stream);
  const n = 50_000;
  let t0 = performance.now();
  for (let i = 0; i < n; i++) d.launcher.launchProgram(noop, [], {}, stream);
  const launchUs = ((performance.now() - t0) * 1000) / n;
  await d.sync();
  const ev = drv.out1('cuEventCreate', (o) => drv.api.cuEventCreate(o, 2));
  t0 = performance.now();
  for (let i = 0; i < n; i++) drv.api.cuEventRecord(ev, stream);
  const recordUs = ((performance.now() - t0) * 1000) / n;
  await d.sync();
  t0 = performance.now();
  for (let i = 0; i < n; i++) drv.api.cuEventQuery(ev);
  const queryUs = ((performance.now() - t0) * 1000) / n;
  drv.api.cuEventDestroy_v2(ev);
  note(
    `host cost per call: cuLaunchKernel(noop) ${launchUs.toFixed(2)} us, cuEventRecord ${recordUs.toFixed(2)} us, cuEventQuery ${queryUs.toFixed(2)} us`,
  );
  // GEMM timed with events, no runtime: separates the libraries from Tandem's own overhead.
  const chosen = { ...d.launcher.gemmEngines };
  for (const [dtype, precision, key] of [
    ['bf16', 'default', 'bf16'],
    ['f32', 'tf32', 'tf32'],
  ] as const) {
    const bytes = N * N * (dtype === 'bf16' ? 2 : 4);
    const bufs = [0, 1, 2].map(() => d.node.alloc(bytes));
    const gemm = (): void =>
      d.launcher.gemm(
        {
          dtype,
          precision,
          transA: false,
          transB: false,
          m: N,
          n: N,
          k: N,
          alpha: 1,
          beta: 0,
          a: bufs[0]!.ptr,
          b: bufs[1]!.ptr,
          c: bufs[2]!.ptr,
        },
        stream,
      );
    for (const engine of ['cublas', 'cublaslt'] as const) {
      d.launcher.gemmEngines[key] = engine;
      for (let i = 0; i < 5; i++) gemm();
      await d.sync();
      const e0 = drv.out1('cuEventCreate', (o) => drv.api.cuEventCreate(o, 0));
      const e1 = drv.out1('cuEventCreate', (o) => drv.api.cuEventCreate(o, 0));
      drv.api.cuEventRecord(e0, stream);
      for (let i = 0; i < 30; i++) gemm();
      drv.api.cuEventRecord(e1, stream);
      await d.sync();
      const ms: [number] = [0];
      drv.api.cuEventElapsedTime_v2(ms, e0, e1);
      note(
        `${engine} ${key} ${N}^3 direct, event-timed: ${((2 * N ** 3 * 30) / (ms[0] / 1000) / 1e12).toFixed(1)} TFLOP/s`,
      );
    }
    for (const b of bufs) d.node.free(b);
  }
  d.launcher.gemmEngines = chosen;
  note(`GEMM engines chosen by calibration: ${JSON.stringify(chosen)}`);
}

/** Does a koffi async call (a pool thread with no current context) work for cuEventSynchronize? */
async function asyncProbe(d: CudaDevice): Promise<void> {
  const drv = d.context.driver;
  d.context.makeCurrent();
  const ev = drv.out1('cuEventCreate', (o) => drv.api.cuEventCreate(o, 2));
  drv.check(drv.api.cuEventRecord(ev, d.context.streams.compute), 'cuEventRecord');
  const rc = await new Promise<string>((res) => {
    const fn = drv.raw.cuEventSynchronize as unknown as {
      async: (ev: number, cb: (err: unknown, rc: number) => void) => void;
    };
    fn.async(ev, (err, r) => res(err ? `error ${String(err)}` : `rc ${r} ${r === 0 ? '' : drv.describe(r)}`));
  });
  note(`koffi async cuEventSynchronize from a pool thread: ${rc}`);
  drv.api.cuEventDestroy_v2(ev);
}

async function main(): Promise<void> {
  const torchParts = ['gemm', 'copies', 'pipeline'].filter(want);
  const torch = torchParts.length > 0 ? torchBaseline(torchParts) : {};
  const rt = await Runtime.create({
    backends: ['cpu', 'cuda'],
    calibrate: true,
    cacheDir: values['cache'] as string,
  });
  const st = rt.backends.find((b) => b.kind === 'cuda');
  const d = st?.devices[0] as CudaDevice | undefined;
  if (!d) {
    console.log(`CUDA unavailable: ${st?.reason}`);
    await rt.close();
    return;
  }
  console.log(
    `device: ${d.info.name} ${JSON.stringify(d.info.details)} peaks ${JSON.stringify(d.info.peakFlops)}`,
  );
  const step = async (name: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (e) {
      note(`${name} failed: ${e instanceof Error ? e.stack : String(e)}`);
    }
  };
  if (want('launch')) await step('launch costs', () => launchCosts(d));
  for (const [dtype, precision, key, reps] of [
    ['bf16', 'default', 'bf16', 60],
    ['f32', 'tf32', 'tf32', 30],
    ['f32', 'default', 'f32', 8],
  ] as const) {
    if (!want('gemm')) break;
    await step(`gemm ${key}`, async () => {
      const rate = await gemmThroughRuntime(rt, dtype, precision, reps);
      addRow({
        what: `gemm ${key} ${N}^3 via rt.submit (TFLOP/s)`,
        tandem: rate / 1e12,
        baseline: (torch[`gemm_${key}`] ?? NaN) / 1e12,
        unit: 'TFLOP/s',
        target: key === 'bf16' ? '>=0.97' : '>=0.95',
      });
    });
  }
  if (want('launch')) await step('async probe', () => asyncProbe(d));
  const host = new HostNode();
  if (want('copies')) await step('copies', () => copies(d, host, torch));
  if (want('pipeline')) await step('pipeline', () => pipeline(d, host, torch));
  if (want('tiny')) await step('tiny', () => tiny(rt, d));
  await rt.close();
  if (want('gemm'))
    note(`torch again after Tandem's runs: ${JSON.stringify(torchBaseline(['gemm', 'copies']))}`);
  console.log('\n| what | tandem | baseline | ratio | target |\n| --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(
      `| ${r.what} | ${r.tandem.toFixed(2)} | ${r.baseline.toFixed(2)} | ${(r.tandem / r.baseline).toFixed(3)} | ${r.target} |`,
    );
  const json = values['json'] as string | undefined;
  if (json)
    writeFileSync(
      json,
      JSON.stringify({ date: new Date().toISOString(), device: d.info, torch, rows, notes }, null, 2),
    );
}

await main();
