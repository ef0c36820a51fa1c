/**
 * Prepared sequences replayed as CUDA graphs. A prepared sequence (Runtime.prepareSequence, run again
 * with submitPrepared: a kept scoring plan, say) launches the same kernels with the same scalars each
 * run; when its tensors also sit at the same device addresses, its launches are recorded once by
 * stream capture and every later run is one cuGraphLaunch instead of a driver call (and the host work
 * around it) per kernel.
 *
 * A run is recorded the second time the same sequence comes with the same addresses (a sequence run
 * once is not worth a capture); a graph is used only while the addresses match exactly (a tensor moved
 * or re-allocated: recorded again) and the device has not been reset since. Kernels that need scratch
 * memory get their own, kept with the graph. Sequences that cannot be captured (a kernel that checks its
 * result after running, a library that refuses capture) are remembered and always go step by step.
 */
import type { ReplayRequest } from '../device.js';
import { CudaGraph, type GraphDevice } from './graph.js';
import { isCudaKernelImpl, type CudaArg, type CudaKernelImpl } from './kernel-api.js';
import { CudaBuffer, type CudaMemoryNode } from './memory-node.js';

/** Graphs kept (the least recently replayed destroyed first). */
const MAX_GRAPHS = 64;

interface Recorded {
  readonly graph: CudaGraph;
  /** Scratch memory its kernels were recorded with (a training step's norms, backward partials). */
  readonly scratch: readonly CudaBuffer[];
  readonly addresses: Float64Array;
  readonly epoch: number;
}

/** What the replayer needs of its device (CudaDevice provides it). */
export interface ReplayDevice extends GraphDevice {
  readonly node: CudaMemoryNode;
  /** Launches held for the end of the turn go out first (stream order). */
  flushLaunches(): void;
  /** The step's buffers may be written: eager copies of their old contents are stale. */
  dropEager(buf: CudaBuffer): void;
  isFailed(taskId: number): boolean;
  isClosed(): boolean;
  rememberFailure(taskId: number): void;
}

export class SequenceGraphs {
  private readonly graphs = new Map<object, Recorded>();
  /** Addresses of sequences seen once (recorded on their next run at the same addresses). */
  private readonly seen = new WeakMap<object, Float64Array>();
  /** Sequences that cannot be captured. */
  private readonly refused = new WeakSet<object>();
  readonly stats = { captured: 0, replayed: 0, declined: 0, refused: 0 };

  constructor(private readonly device: ReplayDevice) {}

  /** ExecQueue.replay: true when the run went out as a graph (then `done` runs once). */
  replay(req: ReplayRequest, done: (err: Error | null) => void): boolean {
    const d = this.device;
    // What the step path reports (a failed predecessor, a closed device) is left to it.
    if (d.isClosed() || this.refused.has(req.key) || req.after.some((id) => d.isFailed(id)))
      return this.decline();
    const addresses = this.addresses(req);
    if (addresses === null) return this.decline();
    let rec = this.graphs.get(req.key);
    if (rec && (rec.epoch !== d.node.epoch || !same(rec.addresses, addresses))) {
      this.drop(req.key, rec);
      rec = undefined;
    }
    if (!rec) {
      const before = this.seen.get(req.key);
      if (!before || !same(before, addresses)) {
        this.seen.set(req.key, addresses);
        return this.decline();
      }
      const captured = this.capture(req, addresses);
      if (captured === null) return this.decline();
      rec = { ...captured, addresses, epoch: d.node.epoch };
      this.graphs.set(req.key, rec);
      this.stats.captured++;
      if (this.graphs.size > MAX_GRAPHS) {
        const [oldKey, oldest] = this.graphs.entries().next().value as [object, Recorded];
        this.drop(oldKey, oldest);
      }
    } else {
      // Most recently used last (the Map's order is the eviction order).
      this.graphs.delete(req.key);
      this.graphs.set(req.key, rec);
    }
    for (const step of req.steps) for (const a of step.args) d.dropEager(a.buffer as CudaBuffer);
    this.stats.replayed++;
    d.flushLaunches(); // launches held from earlier in this turn go first
    rec.graph.launch((err) => {
      if (err) {
        d.rememberFailure(req.taskId);
        d.rememberFailure(req.lastStepId);
      }
      done(err);
    });
    return true;
  }

  /** Destroys every graph (device close). */
  dropAll(): void {
    for (const [key, rec] of this.graphs) this.drop(key, rec);
  }

  private decline(): false {
    this.stats.declined++;
    return false;
  }

  private drop(key: object, rec: Recorded): void {
    this.graphs.delete(key);
    rec.graph.destroy();
    this.releaseScratch(rec.scratch);
  }

  /**
   * Scratch goes back to the pool once the compute stream has finished what is queued on it (a replay
   * may still be running; copies on other streams could otherwise be handed its memory).
   */
  private releaseScratch(scratch: readonly CudaBuffer[]): void {
    if (scratch.length === 0) return;
    const d = this.device;
    const free = (): void => {
      for (const b of scratch) d.node.free(b);
    };
    if (d.isClosed()) free();
    else d.poller.watch(d.context.streams.compute, free);
  }

  /** Every step's argument addresses in order; null when one is not usable here (the step path reports it). */
  private addresses(req: ReplayRequest): Float64Array | null {
    let n = 0;
    for (const step of req.steps) n += step.args.length;
    const out = new Float64Array(n);
    let i = 0;
    for (const step of req.steps)
      for (const a of step.args) {
        const buf = a.buffer;
        if (!(buf instanceof CudaBuffer) || buf.node !== this.device.node || this.device.node.isLost(buf))
          return null;
        out[i++] = buf.ptr;
      }
    return out;
  }

  private capture(
    req: ReplayRequest,
    addresses: Float64Array,
  ): { graph: CudaGraph; scratch: CudaBuffer[] } | null {
    const impls: CudaKernelImpl[] = [];
    for (const step of req.steps) {
      if (!isCudaKernelImpl(step.impl)) {
        this.refuse(req.key);
        return null;
      }
      impls.push(step.impl);
    }
    this.device.flushLaunches();
    // Kernels that need scratch memory get their own, owned by the graph (freed when it is dropped).
    const scratch: CudaBuffer[] = [];
    try {
      const graph = CudaGraph.capture(
        this.device,
        (launch) => {
          let i = 0;
          req.steps.forEach((step, s) => {
            const args: CudaArg[] = step.args.map((a) => ({ ptr: addresses[i++]!, desc: a.desc }));
            launch(impls[s]!, args, step.scalars);
          });
        },
        (bytes) => {
          const b = this.device.node.alloc(bytes);
          scratch.push(b);
          return b.ptr;
        },
      );
      return { graph, scratch };
    } catch {
      // A library that will not be captured, a check after running, ...: this sequence goes step by step.
      this.releaseScratch(scratch);
      this.refuse(req.key);
      return null;
    }
  }

  private refuse(key: object): void {
    this.refused.add(key);
    this.stats.refused++;
  }
}

function same(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
