/**
 * Short CPU calibration: f32/f64 GEMM rate on all workers at once and streaming copy bandwidth.
 * Cached on disk by (CPU model, threads, GEMM engine) so it runs once per machine.
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DType } from '../../core/dtype.js';
import { bytesPerElement } from '../../core/dtype.js';
import type { BackendContext, HostBuffer, LaunchRequest } from '../device.js';
import type { CpuQueue } from './cpu-queue.js';

export interface CpuPeaks {
  readonly gemmF32?: number;
  readonly gemmF64?: number;
  readonly bandwidth?: number;
  readonly source: 'measured' | 'cache' | 'not measured';
}

const CACHE_VERSION = 1;

function run(q: CpuQueue, req: LaunchRequest): Promise<void> {
  return new Promise((resolve, reject) => q.launch(req, (err) => (err ? reject(err) : resolve())));
}

function buffer(ctx: BackendContext, dtype: DType, n: number, fill: boolean): HostBuffer {
  const b = ctx.hostNode.alloc(n * bytesPerElement(dtype)) as HostBuffer;
  if (fill) {
    const v = dtype === 'f64' ? new Float64Array(b.sab, 0, n) : new Float32Array(b.sab, 0, n);
    for (let i = 0; i < n; i++) v[i] = Math.random() - 0.5;
  }
  return b;
}

let nextId = -1;

async function gemmRate(ctx: BackendContext, queues: readonly CpuQueue[], dtype: DType): Promise<number> {
  const n = 512;
  const desc = { shape: [n, n], dtype, bytes: n * n * bytesPerElement(dtype) };
  const per = queues.map(() => [
    buffer(ctx, dtype, n * n, true),
    buffer(ctx, dtype, n * n, true),
    buffer(ctx, dtype, n * n, false),
  ]);
  const once = (): Promise<void[]> =>
    Promise.all(
      queues.map((q, i) =>
        run(q, {
          taskId: nextId--,
          op: 'gemm',
          impl: undefined,
          args: per[i]!.map((b) => ({ buffer: b, desc })),
          scalars: { alpha: 1, beta: 0, transA: false, transB: false },
          after: [],
        }),
      ),
    );
  await once(); // warm-up
  const reps = 3;
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) await once();
  const sec = (performance.now() - t0) / 1000;
  return (reps * queues.length * 2 * n ** 3) / sec;
}

async function bandwidth(ctx: BackendContext, queues: readonly CpuQueue[]): Promise<number> {
  const n = 4 << 20; // 16 MiB of f32 per buffer per worker
  const desc = { shape: [n], dtype: 'f32' as const, bytes: n * 4 };
  const per = queues.map(() => [buffer(ctx, 'f32', n, true), buffer(ctx, 'f32', n, false)]);
  const once = (): Promise<void[]> =>
    Promise.all(
      queues.map((q, i) =>
        run(q, {
          taskId: nextId--,
          op: 'copy',
          impl: undefined,
          args: per[i]!.map((b) => ({ buffer: b, desc })),
          scalars: {},
          after: [],
        }),
      ),
    );
  await once();
  const reps = 4;
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) await once();
  const sec = (performance.now() - t0) / 1000;
  return (reps * queues.length * 2 * n * 4) / sec;
}

export async function calibrateCpu(
  ctx: BackendContext,
  queues: readonly CpuQueue[],
  key: string,
): Promise<CpuPeaks> {
  const file = join(ctx.cacheDir, 'cpu-calibration.json');
  let cache: Record<string, CpuPeaks> = {};
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as {
      version?: number;
      entries?: Record<string, CpuPeaks>;
    };
    if (parsed.version === CACHE_VERSION && parsed.entries) cache = parsed.entries;
  } catch {
    // no cache yet, or unreadable: measure again
  }
  const hit = cache[key];
  if (hit) return { ...hit, source: 'cache' };
  if (!ctx.calibrate) return { source: 'not measured' };
  try {
    const peaks: CpuPeaks = {
      gemmF32: await gemmRate(ctx, queues, 'f32'),
      gemmF64: await gemmRate(ctx, queues, 'f64'),
      bandwidth: await bandwidth(ctx, queues),
      source: 'measured',
    };
    cache[key] = peaks;
    mkdirSync(ctx.cacheDir, { recursive: true });
    writeFileSync(file, JSON.stringify({ version: CACHE_VERSION, entries: cache }, null, 2));
    return peaks;
  } catch (e) {
    ctx.log(`CPU calibration failed: ${(e as Error).message}`);
    return { source: 'not measured' };
  }
}
