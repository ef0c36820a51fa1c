/**
 * Real-device half of `tandem bench sched`:
 *  - mixed graph: many small GEMMs and a few large ones on the real CPU plus a GPU (the real CUDA
 *    device when present, else an emulated one paced in wall time), learned dmdas against GPU-only
 *    and CPU-only, with where the small and the large tasks went;
 *  - `--real`: tiled Cholesky through the task graph against one potrf call on the same device
 *    (cuSOLVER on CUDA, LAPACK on the CPU), TFLOP/s for both, in the same run.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Runtime, fillRandom, simBackend, type Backend, type TaskEvent, type Tensor } from 'tandem';
import { tiled } from 'tandem/workloads';

const { spdValue, submitCholesky, tileMatrix } = tiled;

export interface MixedRow {
  readonly policy: string;
  readonly ms: number;
  readonly smallOnGpu: number;
  readonly largeOnGpu: number;
}

export interface MixedReport {
  readonly gpu: string;
  readonly small: number;
  readonly large: number;
  readonly smallN: number;
  readonly largeN: number;
  readonly threads: number;
  readonly rows: MixedRow[];
}

/** An H100-class GPU behind PCIe 4 for machines without one: 20 TFLOP/s f32, 10 µs launches, 12 GB/s. */
function emulatedGpu(): Backend {
  return simBackend({
    devices: [{ id: 'gpu0', type: 'gpu', flops: 2e13, launchUs: 10 }],
    compute: false,
    paced: { bandwidth: 12e9, latencyUs: 10 },
  });
}

async function openMixed(
  cuda: boolean,
  scheduler: string,
  cacheDir: string,
  threads: number,
): Promise<Runtime> {
  return Runtime.create({
    backends: cuda ? ['cpu', 'cuda'] : ['cpu', emulatedGpu()],
    scheduler,
    cacheDir,
    calibrate: true,
    options: { cpu: { threads } },
    log: () => undefined,
  });
}

async function mixedOnce(
  rt: Runtime,
  gpuKind: string,
  policy: string,
  small: number,
  large: number,
  sn: number,
  ln: number,
): Promise<MixedRow> {
  const mk = (n: number, i: number): Tensor[] => [
    rt.tensor([n, n], 'f32', fillRandom(new Float32Array(n * n), i, -0.5, 0.5)),
    rt.tensor([n, n], 'f32', fillRandom(new Float32Array(n * n), i + 7, -0.5, 0.5)),
    rt.tensor([n, n], 'f32'),
  ];
  const smalls = Array.from({ length: small }, (_, i) => mk(sn, i));
  const larges = Array.from({ length: large }, (_, i) => mk(ln, 1000 + i));
  const events: TaskEvent[] = [];
  const obs = { onTaskEnd: (e: TaskEvent) => events.push(e) };
  rt.addObserver(obs);
  const device = policy === 'gpu-only' ? gpuKind : policy === 'cpu-only' ? 'cpu' : undefined;
  const t0 = performance.now();
  const every = Math.max(1, Math.floor(small / Math.max(1, large)));
  let li = 0;
  for (let i = 0; i < small; i++) {
    if (i % every === 0 && li < large) {
      const [a, b, c] = larges[li++]!;
      rt.submit({
        kernel: 'gemm',
        args: { a: a!, b: b!, c: c! },
        name: 'large',
        ...(device ? { device } : {}),
      });
    }
    const [a, b, c] = smalls[i]!;
    rt.submit({
      kernel: 'gemm',
      args: { a: a!, b: b!, c: c! },
      name: 'small',
      ...(device ? { device } : {}),
    });
  }
  await rt.idle();
  const ms = performance.now() - t0;
  rt.removeObserver(obs);
  for (const ts of [...smalls, ...larges]) for (const t of ts) rt.free(t);
  const onGpu = (name: string): number =>
    events.filter((e) => e.name === name && e.deviceId !== 'cpu0').length;
  return { policy, ms, smallOnGpu: onGpu('small'), largeOnGpu: onGpu('large') };
}

export async function runMixed(opts: {
  cuda: boolean;
  small: number;
  large: number;
  smallN: number;
  largeN: number;
  /** CPU worker threads (one core left to the submitting thread, as StarPU reserves one per GPU). */
  threads: number;
}): Promise<MixedReport> {
  const cacheDir = mkdtempSync(join(tmpdir(), 'tandem-bench-sched-'));
  const rows: MixedRow[] = [];
  let gpuName = '';
  for (const policy of ['dmdas', 'gpu-only', 'cpu-only']) {
    // dmdas learns in a first pass (its models persist in cacheDir), the timed pass uses them.
    const rt = await openMixed(opts.cuda, policy === 'dmdas' ? 'dmdas' : 'eager', cacheDir, opts.threads);
    try {
      const gpu = rt.devices.find((d) => d.info.kind !== 'cpu');
      if (!gpu) throw new Error('no GPU (real or emulated) opened');
      gpuName = `${gpu.info.id} (${gpu.info.name}${gpu.info.kind === 'sim' ? ', emulated: 20 TFLOP/s, 10 µs launch, 12 GB/s' : ''})`;
      const kind = gpu.info.kind === 'sim' ? gpu.info.id : gpu.info.kind;
      await mixedOnce(
        rt,
        kind,
        policy,
        Math.min(opts.small, 400),
        Math.min(opts.large, 4),
        opts.smallN,
        opts.largeN,
      );
      const reps: MixedRow[] = [];
      for (let r = 0; r < 3; r++)
        reps.push(await mixedOnce(rt, kind, policy, opts.small, opts.large, opts.smallN, opts.largeN));
      reps.sort((a, b) => a.ms - b.ms);
      rows.push(reps[1]!);
    } finally {
      await rt.close();
    }
  }
  return {
    gpu: gpuName,
    small: opts.small,
    large: opts.large,
    smallN: opts.smallN,
    largeN: opts.largeN,
    threads: opts.threads,
    rows,
  };
}

export interface RealCholeskyReport {
  readonly device: string;
  readonly n: number;
  readonly tile: number;
  readonly tiledMs: number;
  readonly tiledTflops: number;
  readonly singleMs: number;
  readonly singleTflops: number;
  readonly ratio: number;
}

export async function runRealCholesky(opts: {
  n: number;
  tile: number;
  device: string;
  scheduler: string;
}): Promise<RealCholeskyReport> {
  const rt = await Runtime.create({
    backends: opts.device === 'cpu' ? ['cpu'] : ['cpu', opts.device],
    scheduler: opts.scheduler,
    log: (m) => process.stderr.write(`[tandem] ${m}\n`),
  });
  try {
    if (!rt.devices.some((d) => d.info.kind === opts.device))
      throw new Error(
        `no ${opts.device} device: ${rt.backends.map((b) => `${b.kind}: ${b.reason ?? 'ok'}`).join('; ')}`,
      );
    const value = spdValue(opts.n, 9);
    const flops = opts.n ** 3 / 3;
    // One potrf call on the whole matrix (cuSOLVER/LAPACK), data already on the device.
    const whole = tileMatrix(rt, opts.n, opts.n, 'f32', value, false).tiles[0]![0]!;
    await rt.submit({ kernel: 'scale', args: { x: whole }, scalars: { alpha: 1 }, device: opts.device }).done;
    const t1 = performance.now();
    await rt.submit({ kernel: 'potrf', args: { a: whole }, device: opts.device }).done;
    const singleMs = performance.now() - t1;
    rt.free(whole);
    // The task graph: tiles start on the host, as a user's matrix would.
    const a = tileMatrix(rt, opts.n, opts.tile, 'f32', value, true);
    const t0 = performance.now();
    await submitCholesky(rt, a).wait();
    const tiledMs = performance.now() - t0;
    return {
      device: opts.device,
      n: opts.n,
      tile: opts.tile,
      tiledMs,
      tiledTflops: flops / tiledMs / 1e9,
      singleMs,
      singleTflops: flops / singleMs / 1e9,
      ratio: singleMs / tiledMs,
    };
  } finally {
    await rt.close();
  }
}
