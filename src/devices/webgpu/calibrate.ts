/**
 * Measured peaks for the scheduler's roofline fallback: f32 GEMM rate (with the GEMM kernel the runtime
 * hands the backend — devices/ does not import kernels/) and streaming bandwidth (buffer-to-buffer
 * copy). Run only when ctx.calibrate; cached per adapter under ctx.cacheDir so later opens (and tests)
 * read the figures without measuring.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DeviceBuffer, LaunchRequest, TensorDesc } from '../device.js';
import type { WebGpuKernel } from './kernel-api.js';
import type { WebGpuDevice } from './webgpu-device.js';

export interface Measured {
  readonly peakF32?: number;
  readonly bandwidth?: number;
  readonly gemmSize?: number;
  readonly measuredAt: string;
}

const CACHE_FILE = 'webgpu-calibration.json';

function adapterKey(dev: WebGpuDevice): string {
  const d = dev.info.details;
  return [d.backend, d.vendor, d.device, d.description, d.featureLevel].join('|');
}

async function readCache(cacheDir: string): Promise<Record<string, Measured>> {
  try {
    return JSON.parse(await readFile(join(cacheDir, CACHE_FILE), 'utf8')) as Record<string, Measured>;
  } catch {
    return {};
  }
}

export async function cachedMeasurements(cacheDir: string, dev: WebGpuDevice): Promise<Measured | undefined> {
  return (await readCache(cacheDir))[adapterKey(dev)];
}

function launch(dev: WebGpuDevice, req: LaunchRequest): Promise<void> {
  return new Promise((resolve, reject) =>
    dev.queues[0]!.launch(req, (err) => (err ? reject(err) : resolve())),
  );
}

/** Seconds per launch: one warm-up, then `reps` launches back to back, timed to the last completion. */
async function timeLaunches(
  dev: WebGpuDevice,
  make: (i: number) => LaunchRequest,
  reps: number,
): Promise<number> {
  await launch(dev, make(0));
  const t0 = performance.now();
  await Promise.all(Array.from({ length: reps }, (_, i) => launch(dev, make(i + 1))));
  return (performance.now() - t0) / 1000 / reps;
}

async function measureGemm(dev: WebGpuDevice, gemm: WebGpuKernel, n: number): Promise<number> {
  const desc: TensorDesc = { shape: [n, n], dtype: 'f32', bytes: n * n * 4 };
  const bufs: DeviceBuffer[] = [
    dev.node.alloc(desc.bytes),
    dev.node.alloc(desc.bytes),
    dev.node.alloc(desc.bytes),
  ];
  try {
    const args = bufs.map((buffer) => ({ buffer, desc }));
    const scalars = { alpha: 1, beta: 0, transA: false, transB: false };
    const reps = dev.info.details.software === true ? 2 : 10;
    const seconds = await timeLaunches(
      dev,
      (i) => ({ taskId: -1 - i, op: 'gemm', impl: gemm, args, scalars, after: [] }),
      reps,
    );
    return (2 * n ** 3) / seconds;
  } finally {
    for (const b of bufs) dev.node.free(b);
  }
}

async function measureBandwidth(dev: WebGpuDevice, bytes: number): Promise<number> {
  const desc: TensorDesc = { shape: [bytes / 4], dtype: 'f32', bytes };
  const src = dev.node.alloc(bytes);
  const dst = dev.node.alloc(bytes);
  const copyKernel: WebGpuKernel = {
    kind: 'webgpu-kernel',
    supports: () => true,
    plan: () => [{ kind: 'copy', src: 0, dst: 1, bytes }],
  };
  const args = [
    { buffer: src, desc },
    { buffer: dst, desc },
  ];
  try {
    const reps = dev.info.details.software === true ? 2 : 20;
    const seconds = await timeLaunches(
      dev,
      (i) => ({ taskId: -1 - i, op: 'copy', impl: copyKernel, args, scalars: {}, after: [] }),
      reps,
    );
    return (2 * bytes) / seconds; // read + write
  } finally {
    dev.node.free(src);
    dev.node.free(dst);
  }
}

export async function calibrate(
  cacheDir: string,
  dev: WebGpuDevice,
  gemm: WebGpuKernel | undefined,
  gemmSize: number,
): Promise<Measured> {
  const software = dev.info.details.software === true;
  const n = software ? 256 : gemmSize;
  const limit = dev.node.maxBufferBytes.bytes;
  const bwBytes = Math.min(software ? 16 << 20 : 256 << 20, Math.floor(limit / 2 / 256) * 256);
  const measured: Measured = {
    ...(gemm ? { peakF32: await measureGemm(dev, gemm, n), gemmSize: n } : {}),
    bandwidth: await measureBandwidth(dev, bwBytes),
    measuredAt: new Date().toISOString(),
  };
  const all = await readCache(cacheDir);
  all[adapterKey(dev)] = measured;
  await mkdir(cacheDir, { recursive: true });
  await writeFile(join(cacheDir, CACHE_FILE), JSON.stringify(all, null, 2));
  return measured;
}
