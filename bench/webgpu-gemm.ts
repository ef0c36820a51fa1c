/**
 * WebGPU f32 GEMM beside cuBLAS SGEMM (no TF32) in one process, one after the other on the same
 * random data: each GEMM tiling of src/kernels/gemm/webgpu.ts, timed over back-to-back launches with
 * the data resident, checked against float64 dot products on sampled elements; then the CUDA backend's
 * gemm with precision 'default' when a CUDA device is present. Prints one table with the ratios.
 *   node dist/bench/webgpu-gemm.js [--n 4096] [--reps 10] [--rounds 3] [--json]
 *   tandem bench gemm --device webgpu  (through bench/gemm.ts)
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { flops, intOption, parse, print, table } from '../src/cli/output.js';
import { fillRandom } from '../src/core/seeded-random.js';
import type {
  Backend,
  BackendStatus,
  CopyRoute,
  Device,
  DeviceBuffer,
  LaunchArg,
  TensorDesc,
} from '../src/devices/device.js';
import { WebGpuBackend } from '../src/devices/webgpu/backend.js';
import type { WebGpuKernel } from '../src/devices/webgpu/kernel-api.js';
import type { WebGpuDevice } from '../src/devices/webgpu/webgpu-device.js';
import {
  GEMM_LARGE,
  GEMM_SMALL,
  type GemmTiling,
  makeGemmWebGpu,
  workgroupBytes,
} from '../src/kernels/gemm/webgpu.js';
import { KERNEL_IMPLS } from '../src/kernels/register.js';
import { HostNode } from '../src/memory/host-node.js';

export interface GemmBenchRow {
  readonly engine: string;
  readonly device: string;
  /** FLOP/s: best and median round. */
  readonly best: number;
  readonly median: number;
  /** Largest relative error over the sampled elements (float64 reference). */
  readonly maxRelError: number;
  readonly note?: string;
}

export interface GemmBenchResult {
  readonly n: number;
  readonly rows: readonly GemmBenchRow[];
  readonly notes: readonly string[];
}

const TILINGS: readonly { name: string; tiling: GemmTiling }[] = [
  { name: '128x128 tile, 8x8/thread, bk 8', tiling: GEMM_LARGE },
  { name: '128x128 tile, 8x8/thread, bk 16', tiling: { tm: 8, tn: 8, bk: 16 } },
  { name: '64x64 tile, 4x4/thread, bk 8', tiling: GEMM_SMALL },
  { name: '128x64 tile, 8x4/thread, bk 16', tiling: { tm: 8, tn: 4, bk: 16 } },
];

const randomMatrix = (n: number, seed: number): Float32Array => fillRandom(new Float32Array(n * n), seed);

const desc = (n: number): TensorDesc => ({ shape: [n, n], dtype: 'f32', bytes: 4 * n * n });

const cb = (fn: (done: (e: Error | null) => void) => void): Promise<void> =>
  new Promise((res, rej) => fn((e) => (e ? rej(e) : res())));

let taskId = 1 << 26;

/** Uploads a, b; times `rounds` of `reps` launches; downloads c and checks sampled elements. */
async function timeGemm(
  status: BackendStatus,
  device: Device,
  impl: unknown,
  label: string,
  a: Float32Array,
  b: Float32Array,
  n: number,
  reps: number,
  rounds: number,
): Promise<GemmBenchRow> {
  const host = new HostNode();
  const kind = device.node.kind;
  const h2d = status.copies.find((c) => c.from === 'host' && c.to === kind) as CopyRoute;
  const d2h = status.copies.find((c) => c.from === kind && c.to === 'host') as CopyRoute;
  const desc: TensorDesc = { shape: [n, n], dtype: 'f32', bytes: 4 * n * n };
  const bufs: DeviceBuffer[] = [
    device.node.alloc(desc.bytes),
    device.node.alloc(desc.bytes),
    device.node.alloc(desc.bytes),
  ];
  try {
    for (const [i, data] of [a, b].entries()) {
      const h = host.alloc(desc.bytes);
      new Float32Array(h.sab, 0, n * n).set(data);
      await cb((done) => h2d.copy(h, bufs[i]!, desc.bytes, done));
    }
    const args: LaunchArg[] = bufs.map((buffer) => ({ buffer, desc }));
    const scalars = { alpha: 1, beta: 0, transA: false, transB: false, precision: 'default' };
    const launch = (): Promise<void> =>
      cb((done) =>
        device.queues[0]!.launch({ taskId: taskId++, op: 'gemm', impl, args, scalars, after: [] }, done),
      );
    await launch(); // compile and warm up
    const rates: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      await Promise.all(Array.from({ length: reps }, launch));
      rates.push((2 * n ** 3 * reps) / ((performance.now() - t0) / 1000));
    }
    rates.sort((x, y) => x - y);
    const hc = host.alloc(desc.bytes);
    await cb((done) => d2h.copy(bufs[2]!, hc, desc.bytes, done));
    const c = new Float32Array(hc.sab, 0, n * n);
    let maxRel = 0;
    for (let s = 0; s < 64; s++) {
      const i = (s * 7919) % n;
      const j = (s * 104729 + 13) % n;
      let want = 0;
      let scale = 0;
      for (let k = 0; k < n; k++) {
        want += a[i * n + k]! * b[k * n + j]!;
        scale += Math.abs(a[i * n + k]! * b[k * n + j]!);
      }
      maxRel = Math.max(maxRel, Math.abs(c[i * n + j]! - want) / scale);
    }
    return {
      engine: label,
      device: device.info.name,
      best: rates.at(-1)!,
      median: rates[rates.length >> 1]!,
      maxRelError: maxRel,
    };
  } finally {
    for (const buf of bufs) device.node.free(buf);
  }
}

async function openBackend(backend: Backend, options: Record<string, unknown>): Promise<BackendStatus> {
  return backend.open({
    cacheDir: join(tmpdir(), 'tandem-bench-cache'),
    hostNode: new HostNode(),
    calibrate: false,
    options,
    log: () => undefined,
  });
}

export async function runWebGpuGemmBench(n: number, reps: number, rounds: number): Promise<GemmBenchResult> {
  const a = randomMatrix(n, 1);
  const b = randomMatrix(n, 2);
  const rows: GemmBenchRow[] = [];
  const notes: string[] = [];
  const wg = await openBackend(new WebGpuBackend(), {});
  if (!wg.available) notes.push(`webgpu unavailable: ${wg.reason}`);
  else {
    const dev = wg.devices[0]!;
    notes.push(
      `webgpu: ${dev.info.name} via ${String(dev.info.details.backend)} (${String(dev.info.details.featureLevel)})`,
    );
    const software = dev.info.details.software === true;
    for (const { name, tiling } of TILINGS) {
      const kernel: WebGpuKernel = makeGemmWebGpu(tiling);
      const wdev = dev as WebGpuDevice;
      if (!kernel.supports([desc(n), desc(n), desc(n)], {}, wdev.features)) {
        notes.push(
          `${name}: needs ${workgroupBytes(tiling)} B of workgroup memory, device has ${wdev.features.maxWorkgroupStorageBytes}`,
        );
        continue;
      }
      rows.push(
        await timeGemm(
          wg,
          dev,
          kernel,
          `webgpu ${name}`,
          a,
          b,
          n,
          software ? 1 : reps,
          software ? 1 : rounds,
        ),
      );
    }
    await dev.close();
  }
  // cuBLAS SGEMM without TF32, through the runtime's CUDA backend, after WebGPU has let the GPU go.
  try {
    const mod = (await import('../src/devices/cuda/backend.js')) as { cudaBackend: Backend };
    const cu = await openBackend(mod.cudaBackend, {});
    if (!cu.available) notes.push(`cuda unavailable: ${cu.reason}`);
    else {
      const impl = KERNEL_IMPLS.find((e) => e.op === 'gemm' && e.backend === 'cuda')!.impl;
      rows.push(await timeGemm(cu, cu.devices[0]!, impl, 'cuBLAS SGEMM (no TF32)', a, b, n, reps, rounds));
      for (const d of cu.devices) await d.close();
    }
  } catch (e) {
    notes.push(`cuda backend failed to load: ${e instanceof Error ? e.message : String(e)}`);
  }
  return { n, rows, notes };
}

export function formatGemmBench(r: GemmBenchResult): string {
  const cublas = r.rows.find((x) => x.engine.startsWith('cuBLAS'));
  const lines = [
    ['engine', 'best', 'median', 'vs cuBLAS', 'max rel err'],
    ...r.rows.map((x) => [
      x.engine,
      flops(x.best),
      flops(x.median),
      cublas ? `${((100 * x.best) / cublas.best).toFixed(1)}%` : '-',
      x.maxRelError.toExponential(1),
    ]),
  ];
  return [`f32 GEMM ${r.n}x${r.n}x${r.n}`, table(lines), ...r.notes.map((s) => `note: ${s}`)].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    n: { type: 'string' },
    reps: { type: 'string' },
    rounds: { type: 'string' },
    device: { type: 'string' },
  });
  const n = intOption(values.n, 'n', 4096, 16, 16384);
  const result = await runWebGpuGemmBench(
    n,
    intOption(values.reps, 'reps', 10),
    intOption(values.rounds, 'rounds', 3),
  );
  print(values.json === true, result, () => formatGemmBench(result));
  // A wrong result is a failed benchmark, whatever its speed.
  return result.rows.every((x) => x.maxRelError < 1e-4) ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(e);
      process.exit(70);
    },
  );
}
