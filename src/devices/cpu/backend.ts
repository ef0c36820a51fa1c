/**
 * The CPU backend: one device over host memory with a pool of worker threads. Device figures come
 * from a short calibration (GEMM rate, memory bandwidth), cached on disk; never guessed.
 */
import { availableParallelism, cpus, totalmem } from 'node:os';
import type { DType } from '../../core/dtype.js';
import type {
  Backend,
  BackendContext,
  BackendStatus,
  Device,
  DeviceInfo,
  HostBuffer,
  MemoryNode,
} from '../device.js';
import { CpuQueue } from './cpu-queue.js';
import { calibrateCpu } from './calibrate.js';
import type { WorkerConfig } from './protocol.js';

export interface CpuOptions {
  /** Worker threads (default: available cores). */
  readonly threads?: number;
  /** Launches a worker may hold at once (default 16). */
  readonly depth?: number;
  readonly gemmEngine?: WorkerConfig['gemmEngine'];
  /** OpenBLAS threads per call; a service sets 1 so that the event loop keeps a core (see service config). */
  readonly blasThreads?: number;
}

export class CpuDevice implements Device {
  info: DeviceInfo;
  readonly caps = { customSource: ['cpu-module'] as const };

  constructor(
    readonly node: MemoryNode,
    readonly queues: readonly CpuQueue[],
    info: DeviceInfo,
    private readonly detach: () => void,
  ) {
    this.info = info;
  }

  async close(): Promise<void> {
    this.detach();
    await Promise.all(this.queues.map((q) => q.close()));
  }
}

export function cpuOptions(options: Readonly<Record<string, unknown>>): CpuOptions {
  const o = (options['cpu'] ?? {}) as Record<string, unknown>;
  return {
    ...(typeof o['threads'] === 'number' ? { threads: o['threads'] } : {}),
    ...(typeof o['depth'] === 'number' ? { depth: o['depth'] } : {}),
    ...(typeof o['gemmEngine'] === 'string'
      ? { gemmEngine: o['gemmEngine'] as WorkerConfig['gemmEngine'] }
      : {}),
  };
}

export const cpuBackend: Backend = {
  kind: 'cpu',
  async open(ctx: BackendContext): Promise<BackendStatus> {
    const opts = cpuOptions(ctx.options);
    const threads = Math.max(1, Math.min(opts.threads ?? availableParallelism(), 256));
    const queues = Array.from(
      { length: threads },
      (_, i) =>
        new CpuQueue(
          'cpu0',
          i,
          opts.depth ?? 256,
          opts.gemmEngine ?? 'auto',
          opts.blasThreads,
          ctx.kernelTableModule,
        ),
    );
    try {
      await Promise.all(queues.map((q) => q.ready));
    } catch (e) {
      await Promise.all(queues.map((q) => q.close()));
      return {
        kind: 'cpu',
        available: false,
        reason: `worker threads failed to start: ${(e as Error).message}`,
        devices: [],
        copies: [],
      };
    }
    const engine = queues[0]!.engine;
    const model = cpus()[0]?.model.trim() ?? 'unknown CPU';
    const peaks = await calibrateCpu(ctx, queues, `${model}|${threads}|${engine}`);
    const peakFlops: Partial<Record<DType, number>> = {};
    if (peaks.gemmF32) peakFlops.f32 = peaks.gemmF32;
    if (peaks.gemmF64) peakFlops.f64 = peaks.gemmF64;
    const info: DeviceInfo = {
      id: 'cpu0',
      kind: 'cpu',
      name: `${model} (${threads} threads)`,
      memoryBytes: totalmem(),
      peakFlops,
      ...(peaks.bandwidth ? { memoryBandwidth: peaks.bandwidth } : {}),
      details: {
        threads,
        gemmEngine: engine,
        openblas: engine === 'openblas' ? 'loaded' : queues[0]!.blasReason,
        calibrated: peaks.source,
      },
    };
    const host = ctx.hostNode as MemoryNode & { freeListeners?: Array<(b: HostBuffer) => void> };
    const onFree = (b: HostBuffer): void => {
      for (const q of queues) q.release(b);
    };
    host.freeListeners?.push(onFree);
    const detach = (): void => {
      const l = host.freeListeners;
      if (l && l.includes(onFree)) l.splice(l.indexOf(onFree), 1);
    };
    return {
      kind: 'cpu',
      available: true,
      devices: [new CpuDevice(ctx.hostNode, queues, info, detach)],
      copies: [],
    };
  },
};
