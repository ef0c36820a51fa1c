/**
 * Measured peaks for DeviceInfo: cuBLAS GEMM rate per dtype and copy bandwidths, timed with CUDA events
 * on random data (zeros would flatter tensor cores). Cached as JSON under the cache directory, keyed by
 * device name and library versions, and only measured when the runtime asks for calibration.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DType } from '../../core/dtype.js';
import type { CudaDevice } from './cuda-device.js';
import type { CudaProgram, GemmPrecision } from './kernel-api.js';
import { gemmKey, type GemmEngine } from './launcher.js';

export interface CudaCalibration {
  readonly peakFlops: Partial<Record<DType | 'tf32', number>>;
  /** Device-to-device copy, bytes read + written per second. */
  readonly memoryBandwidth: number;
  readonly h2dBandwidth: number;
  readonly d2hBandwidth: number;
  readonly measuredAt: string;
  /** The faster GEMM library per dtype key, where cuBLASLt was measured too. */
  readonly gemmEngines?: Partial<Record<string, GemmEngine>>;
  /** The rates behind that choice, FLOP/s per "key/engine". */
  readonly gemmRates?: Readonly<Record<string, number>>;
}

const FILL_RANDOM: CudaProgram = {
  kind: 'program',
  entry: 'tdm_fill_random',
  source: `extern "C" __global__ void tdm_fill_random(X_t* p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u; h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    stX(p, i, (h & 0xffffff) / 16777216.0f - 0.5f);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  grid: () => [1024, 1, 1],
  block: () => [256, 1, 1],
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'i64', value: args[0]!.desc.shape[0]! },
  ],
};

export function calibrationFile(cacheDir: string, key: string): string {
  return join(cacheDir, `cuda-calibration-${key.replace(/[^A-Za-z0-9._-]+/g, '_')}.json`);
}

export function readCalibration(file: string): CudaCalibration | null {
  try {
    const c = JSON.parse(readFileSync(file, 'utf8')) as CudaCalibration;
    return typeof c.memoryBandwidth === 'number' ? c : null;
  } catch {
    return null;
  }
}

/** Seconds per repetition of `body` on `stream`, from CUDA events. */
async function timeOn(device: CudaDevice, stream: number, reps: number, body: () => void): Promise<number> {
  const d = device.context.driver;
  device.context.makeCurrent();
  const start = d.out1('cuEventCreate', (o) => d.api.cuEventCreate(o, 0));
  const end = d.out1('cuEventCreate', (o) => d.api.cuEventCreate(o, 0));
  try {
    d.check(d.api.cuEventRecord(start, stream), 'cuEventRecord');
    for (let i = 0; i < reps; i++) body();
    d.check(d.api.cuEventRecord(end, stream), 'cuEventRecord');
    await device.sync();
    const ms: [number] = [0];
    d.check(d.api.cuEventElapsedTime_v2(ms, start, end), 'cuEventElapsedTime_v2');
    return ms[0] / 1000 / reps;
  } finally {
    d.api.cuEventDestroy_v2(start);
    d.api.cuEventDestroy_v2(end);
  }
}

export async function measureCalibration(device: CudaDevice): Promise<CudaCalibration> {
  const node = device.node;
  const peakFlops: Partial<Record<DType | 'tf32', number>> = {};
  const gemmEngines: Partial<Record<string, GemmEngine>> = {};
  const gemmRates: Record<string, number> = {};
  const cases: [DType, GemmPrecision, number, number][] = [
    ['bf16', 'default', 8192, 2],
    ['f16', 'default', 8192, 2],
    ['f32', 'tf32', 8192, 4],
    ['f32', 'default', 4096, 4],
    ['f64', 'default', 4096, 8],
  ];
  const stream = device.context.streams.compute;
  for (const [dtype, precision, n, bytesPer] of cases) {
    const bufs = [0, 1, 2].map(() => node.alloc(n * n * bytesPer));
    try {
      for (const b of bufs)
        device.launcher.launchProgram(
          FILL_RANDOM,
          [{ ptr: b.ptr, desc: { shape: [n * n], dtype, bytes: b.bytes } }],
          {},
          stream,
        );
      const gemm = (): void =>
        device.launcher.gemm(
          {
            dtype,
            precision,
            transA: false,
            transB: false,
            m: n,
            n,
            k: n,
            alpha: 1,
            beta: 0,
            a: bufs[0]!.ptr,
            b: bufs[1]!.ptr,
            c: bufs[2]!.ptr,
          },
          stream,
        );
      const key = gemmKey({ dtype, precision });
      const engines: GemmEngine[] = device.context.cublasLt ? ['cublas', 'cublaslt'] : ['cublas'];
      for (const engine of engines) {
        device.launcher.gemmEngines[key] = engine;
        await timeOn(device, stream, 2, gemm); // warm-up: the library picks and loads its kernel
        const rate = (2 * n * n * n) / (await timeOn(device, stream, 5, gemm));
        gemmRates[`${key}/${engine}`] = rate;
        if (rate > (peakFlops[key as DType | 'tf32'] ?? 0)) {
          peakFlops[key as DType | 'tf32'] = rate;
          gemmEngines[key] = engine;
        }
      }
      device.launcher.gemmEngines[key] = gemmEngines[key] ?? 'cublas';
    } finally {
      for (const b of bufs) node.free(b);
    }
  }
  const d = device.context.driver;
  const copyBytes = 256 << 20;
  const src = node.alloc(copyBytes);
  const dst = node.alloc(copyBytes);
  const host = d.out1('cuMemHostAlloc', (o) => d.api.cuMemHostAlloc(o, copyBytes, 1));
  try {
    const s = device.context.streams;
    const d2d = await timeOn(device, s.compute, 5, () =>
      d.check(d.api.cuMemcpyAsync(dst.ptr, src.ptr, copyBytes, s.compute), 'cuMemcpyAsync'),
    );
    const h2d = await timeOn(device, s.h2d, 3, () =>
      d.check(d.api.cuMemcpyAsync(dst.ptr, host, copyBytes, s.h2d), 'cuMemcpyAsync'),
    );
    const d2h = await timeOn(device, s.d2h, 3, () =>
      d.check(d.api.cuMemcpyAsync(host, src.ptr, copyBytes, s.d2h), 'cuMemcpyAsync'),
    );
    return {
      peakFlops,
      memoryBandwidth: (2 * copyBytes) / d2d,
      h2dBandwidth: copyBytes / h2d,
      d2hBandwidth: copyBytes / d2h,
      measuredAt: new Date().toISOString(),
      gemmEngines,
      gemmRates,
    };
  } finally {
    node.free(src);
    node.free(dst);
    d.api.cuMemFreeHost(host);
  }
}

export function writeCalibration(file: string, c: CudaCalibration, cacheDir: string): void {
  try {
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(file, JSON.stringify(c, null, 2));
  } catch {
    // an unwritable cache only means measuring again next time
  }
}
