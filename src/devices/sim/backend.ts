/**
 * The `sim` backend: devices with their own memory node whose task durations come from a timing
 * model (per-op table or a FLOP rate plus a launch cost) instead of the host they run on. Kernels
 * still compute (the CPU implementations, on the sim node's own buffers, TS engines on the main
 * thread) unless `compute: false`, so results stay checkable while placements, transfers, eviction
 * and faults go through the real runtime: coherence, memory budgets, policies, models.
 *
 * A queue never sleeps: it completes on the next turn of the event loop and reports the simulated
 * duration as the task's timing, which is what the performance models learn.
 */
import { TandemError } from '../../core/errors.js';
import { bytesPerElement, hostView } from '../../core/dtype.js';
import type { CpuArg, CpuKernel, CpuKernelContext } from '../cpu/kernel-api.js';
import type {
  Backend,
  BackendContext,
  BackendStatus,
  CopyRoute,
  Device,
  DeviceBuffer,
  DeviceInfo,
  ExecQueue,
  LaunchRequest,
  LaunchTiming,
  MemoryNode,
  Scalars,
  TensorDesc,
} from '../device.js';

export interface SimDeviceSpec {
  readonly id: string;
  /** What it stands for, for names and tables ('cpu' | 'gpu'). */
  readonly type?: 'cpu' | 'gpu';
  readonly memoryBytes?: number;
  readonly queues?: number;
  /** Launches a queue takes before the runtime holds the rest (default 2; a CUDA stream takes 256). */
  readonly depth?: number;
  /** Sustained FLOP/s of one queue and fixed µs per launch. */
  readonly flops?: number;
  readonly launchUs?: number;
  /** Per-op fixed durations (µs), taking precedence over the rate. */
  readonly opUs?: Readonly<Record<string, number>>;
}

export interface SimBackendOptions {
  readonly devices: readonly SimDeviceSpec[];
  /** Run the kernels (default true). */
  readonly compute?: boolean;
  /** Copies complete on a later turn of the event loop instead of at once. */
  readonly asyncCopies?: boolean;
  /**
   * Emulation instead of simulation: tasks and copies complete at the wall-clock time their model
   * says (without blocking the thread), so these devices can run beside real ones (the mixed-graph
   * bench on a machine without a GPU). Copies cost latency + bytes / bandwidth, one at a time per link.
   */
  readonly paced?: { readonly bandwidth: number; readonly latencyUs: number };
}

const nowUs = (): number => performance.now() * 1000;

/** Runs `fn` once the clock reaches `dueUs`: a timer for the bulk, event-loop turns for the rest. */
function at(dueUs: number, fn: () => void): void {
  const left = dueUs - nowUs();
  if (left > 1500) setTimeout(() => at(dueUs, fn), (left - 1000) / 1000);
  else if (left > 0) setImmediate(() => at(dueUs, fn));
  else setImmediate(fn);
}

let nextBufferId = 1;

/**
 * A sim buffer's bytes are made on first touch: with `compute: false` nothing reads most buffers, and
 * zeroing a fresh SharedArrayBuffer per allocation would dominate the host cost the sim is used to
 * measure.
 */
class SimBuffer implements DeviceBuffer {
  private bytesOnce: SharedArrayBuffer | null = null;
  readonly id = nextBufferId++;
  constructor(
    readonly node: SimNode,
    readonly bytes: number,
  ) {}
  get sab(): SharedArrayBuffer {
    return (this.bytesOnce ??= new SharedArrayBuffer(Math.max(64, Math.ceil(this.bytes / 64) * 64)));
  }
}

class SimNode implements MemoryNode {
  index = -1;
  readonly kind = 'sim' as const;
  constructor(
    readonly name: string,
    readonly capacityBytes: number,
  ) {}
  alloc(bytes: number): SimBuffer {
    return new SimBuffer(this, bytes);
  }
  free(): void {
    // garbage collected; the memory manager does the accounting
  }
}

/** The bytes of a sim buffer or of a host buffer (copies cross between the two). */
function sabOf(b: DeviceBuffer): SharedArrayBuffer {
  const sab = (b as Partial<SimBuffer>).sab;
  if (!(sab instanceof SharedArrayBuffer))
    throw new TandemError('TANDEM_ERR_INTERNAL', 'sim: buffer has no bytes');
  return sab;
}

const TS_CONTEXT: CpuKernelContext = { blas: null, lapack: null, gemmEngine: 'ts', workerIndex: 0 };

/** FLOPs of an op on its arguments (the runtime's cost models, through BackendContext.kernelFlops). */
type FlopsOf = (op: string, args: readonly TensorDesc[], scalars: Scalars) => number;

class SimQueue implements ExecQueue {
  readonly depth: number;
  private readonly failed = new Set<number>();
  /** Simulated clock of this queue (µs): in-order, so a task starts when the previous one ends. */
  private clock = 0;
  constructor(
    readonly id: string,
    private readonly spec: SimDeviceSpec,
    private readonly compute: boolean,
    private readonly isDown: () => string | null,
    private readonly paced: boolean,
    private readonly flopsOf: FlopsOf,
  ) {
    this.depth = spec.depth ?? 2;
  }

  durationUs(req: LaunchRequest): number {
    const fixed = this.spec.opUs?.[req.op];
    if (fixed !== undefined) return fixed;
    const launchUs = this.spec.launchUs ?? 5;
    // Without a FLOP rate the op's cost model is not consulted: a launch-cost-only sim adds no host work.
    if (!this.spec.flops) return launchUs;
    const flops = this.flopsOf(
      req.op,
      req.args.map((a) => a.desc),
      req.scalars,
    );
    return launchUs + (flops / this.spec.flops) * 1e6;
  }

  launch(req: LaunchRequest, done: (err: Error | null, timing?: LaunchTiming) => void): void {
    const after = [...req.after];
    const us = this.durationUs(req);
    const begin = Math.max(this.clock, nowUs());
    if (this.paced) this.clock = begin + us;
    const schedule = (fn: () => void): void => {
      if (this.paced) at(begin + us, fn);
      else setImmediate(fn);
    };
    schedule(() => {
      const down = this.isDown();
      let err: Error | null = null;
      if (down) err = new TandemError('TANDEM_ERR_DEVICE_FAULT', `${this.id}: ${down}`);
      else if (after.some((p) => this.failed.has(p)))
        err = new TandemError('TANDEM_ERR_DEPENDENCY_FAILED', 'a predecessor in this queue failed');
      else if (this.compute) {
        try {
          const k = req.impl as CpuKernel;
          const args: CpuArg[] = req.args.map((a) => ({
            data: hostView(a.desc.dtype, sabOf(a.buffer), 0, a.desc.bytes / bytesPerElement(a.desc.dtype)),
            desc: a.desc,
          }));
          k(args, req.scalars, TS_CONTEXT);
        } catch (e) {
          err = e instanceof Error ? e : new Error(String(e));
        }
      }
      if (err) this.failed.add(req.taskId);
      if (this.paced) return done(err, { startUs: begin, endUs: begin + us });
      const start = Math.max(this.clock, nowUs());
      this.clock = start + us;
      done(err, { startUs: start, endUs: start + us });
    });
  }
}

class SimDevice implements Device {
  readonly caps = {};
  readonly queues: SimQueue[];
  private readonly lost: Array<(reason: string) => void> = [];
  down: string | null = null;

  constructor(
    readonly info: DeviceInfo,
    readonly node: SimNode,
    spec: SimDeviceSpec,
    compute: boolean,
    paced: boolean,
    flopsOf: FlopsOf,
  ) {
    this.queues = Array.from(
      { length: spec.queues ?? 1 },
      (_, i) => new SimQueue(`${info.id}.q${i}`, spec, compute, () => this.down, paced, flopsOf),
    );
  }

  onMemoryLost(listener: (reason: string) => void): void {
    this.lost.push(listener);
  }

  /** Simulates a device fault: its memory is gone (replicas dropped), queued work fails. */
  fault(reason: string): void {
    this.down = reason;
    for (const l of this.lost) l(reason);
  }

  /** The device came back (empty). */
  recover(): void {
    this.down = null;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function copyRoute(
  from: 'host' | 'sim',
  to: 'host' | 'sim',
  async: boolean,
  paced?: SimBackendOptions['paced'],
): CopyRoute {
  let linkFree = 0;
  return {
    from,
    to,
    engine: (src, dst) => `${src.node.name}>${dst.node.name}`,
    copy(src, dst, bytes, done) {
      const run = (): void => {
        try {
          new Uint8Array(sabOf(dst), 0, bytes).set(new Uint8Array(sabOf(src), 0, bytes));
          done(null);
        } catch (e) {
          done(e as Error);
        }
      };
      if (paced) {
        const start = Math.max(linkFree, nowUs());
        linkFree = start + paced.latencyUs + (bytes / paced.bandwidth) * 1e6;
        at(linkFree, run);
      } else if (async) setImmediate(run);
      else run();
    },
  };
}

export function simBackend(opts: SimBackendOptions): Backend & { readonly devices: SimDevice[] } {
  const devices: SimDevice[] = [];
  return {
    kind: 'sim',
    devices,
    open(ctx: BackendContext): Promise<BackendStatus> {
      const compute = opts.compute ?? true;
      const flopsOf: FlopsOf = ctx.kernelFlops ?? (() => 0);
      for (const spec of opts.devices) {
        const mem = spec.memoryBytes ?? 1 << 30;
        const node = new SimNode(spec.id, mem);
        const info: DeviceInfo = {
          id: spec.id,
          kind: 'sim',
          name: `simulated ${spec.type ?? 'gpu'}`,
          memoryBytes: mem,
          peakFlops: spec.flops
            ? { f32: spec.flops * (spec.queues ?? 1), f64: spec.flops * (spec.queues ?? 1) }
            : {},
          details: { type: spec.type ?? 'gpu', simulated: true },
        };
        devices.push(new SimDevice(info, node, spec, compute, !!opts.paced, flopsOf));
      }
      const a = opts.asyncCopies ?? false;
      const p = opts.paced;
      return Promise.resolve({
        kind: 'sim',
        available: true,
        devices,
        copies: [
          copyRoute('host', 'sim', a, p),
          copyRoute('sim', 'host', a, p),
          copyRoute('sim', 'sim', a, p),
        ],
      });
    },
  };
}

export type { SimDevice };
