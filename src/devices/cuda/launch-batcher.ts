/**
 * Automatic CUDA graphs for repeated runs of small launches. Program launches made in one JS turn are
 * held until the end of the turn (a microtask), then enqueued in order on the compute stream. Runs of
 * GROUP consecutive launches are keyed by their exact signatures (function, geometry, addresses,
 * values); a run seen once before is recorded once by stream capture and from then on replayed with a
 * single cuGraphLaunch, which takes the per-launch driver cost (about 5 us through koffi) off each
 * kernel. A chain of small kernels over the same tensors — an iterative solver's step, a time-stepping
 * loop, the tiny-task benchmark — repeats exactly, so it runs from graphs after its second group.
 *
 * Anything else that touches the device's streams calls `flush()` first, so stream order is exactly
 * the order of the calls. Launch streams that do not repeat stop paying for signatures after a while.
 */
import type { Scalars } from '../device.js';
import type { Completion, CompletionPoller } from './completion.js';
import type { CudaContext } from './context.js';
import type { CudaGraph, GraphLaunch } from './graph.js';
import type { CudaArg, CudaProgram } from './kernel-api.js';
import { SIGNATURE_MAX, writeSignature, type Launcher, type PreparedLaunch } from './launcher.js';

/** Launches per recorded graph. */
export const GRAPH_GROUP = 16;
/** Graphs kept (the oldest recorded dropped first). */
const MAX_GRAPHS = 128;
/** Signatures of groups seen once, kept until this many, then forgotten. */
const MAX_SEEN = 4096;
/** After this many groups in a row with no graph, the next SKIP_LAUNCHES launches go without signatures. */
const MISSES_BEFORE_SKIP = 64;
const SKIP_LAUNCHES = 16384;

export interface BatchedLaunch {
  readonly program: CudaProgram;
  readonly args: readonly CudaArg[];
  readonly scalars: Scalars;
  readonly label: string;
  /** Called once the kernel finished, or with the error that kept it from running. */
  readonly done: Completion;
}

export interface LaunchBatcherHost {
  readonly context: CudaContext;
  readonly launcher: Launcher;
  readonly poller: CompletionPoller;
  /** Moves on at every context reset: graphs recorded before it are gone. */
  epoch(): number;
  /** Turns a failed enqueue into the task's error (and starts fault recovery for sticky errors). */
  launchError(e: unknown, label: string): Error;
  /** Records launches as a CUDA graph (CudaGraph.capture); throws when it cannot. */
  capture(body: (launch: GraphLaunch) => void): CudaGraph;
}

interface Graph {
  readonly graph: CudaGraph;
  /** The group's signatures, exactly (a hash match is confirmed against them). */
  readonly signature: Float64Array;
}

export class LaunchBatcher {
  private pending: BatchedLaunch[] = [];
  private scheduled = false;
  /** Recorded graphs by signature hash (a list: different groups may share a hash). */
  private readonly graphs = new Map<number, Graph[]>();
  private graphCount = 0;
  /** Hashes of groups seen once (a collision only records a graph one sighting early). */
  private readonly seen = new Set<number>();
  /** The current group's signatures, and a 32-bit view of them for hashing. */
  private readonly sig = new Float64Array(SIGNATURE_MAX * GRAPH_GROUP);
  private readonly sigWords = new Int32Array(this.sig.buffer);
  private graphEpoch = -1;
  private misses = 0;
  /** Set by failAll: the fault that ended the flush in progress. */
  private failure: Error | null = null;
  private skip = 0;
  /** Kernels enqueued one by one, and through graphs (captures: graphs recorded). */
  readonly stats = { single: 0, graphed: 0, graphLaunches: 0, captures: 0, captureFailures: 0 };

  constructor(private readonly host: LaunchBatcherHost) {}

  push(item: BatchedLaunch): void {
    this.pending.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  get size(): number {
    return this.pending.length;
  }

  /** Enqueues everything held, in order. */
  flush(): void {
    this.scheduled = false;
    const items = this.pending;
    if (items.length === 0) return;
    this.pending = [];
    if (this.graphEpoch !== this.host.epoch()) this.dropGraphs();
    const stream = this.host.context.streams.compute;
    this.failure = null;
    let i = 0;
    while (i < items.length) {
      const failure = this.failure as Error | null;
      if (failure) {
        // A launch faulted and the context was reset: the rest refer to memory that is gone.
        for (; i < items.length; i++) items[i]!.done(failure);
        return;
      }
      if (this.skip > 0) this.skip--;
      else if (items.length - i >= GRAPH_GROUP && this.tryGroup(items, i, stream)) {
        i += GRAPH_GROUP;
        continue;
      }
      this.single(items[i]!, undefined, stream);
      i++;
    }
  }

  /** Fails what is held (after a fault: nothing held may run on the new context). */
  failAll(err: Error): void {
    this.failure = err; // also ends a flush in progress (its launch faulted)
    const items = this.pending;
    this.pending = [];
    for (const it of items) it.done(err);
  }

  /** Destroys the recorded graphs (after a reset they died with the old context: destroy() knows). */
  dropGraphs(): void {
    for (const list of this.graphs.values()) for (const g of list) g.graph.destroy();
    this.graphs.clear();
    this.graphCount = 0;
    this.seen.clear();
    this.graphEpoch = this.host.epoch();
  }

  /** `prepared`: already resolved (null: an empty launch), or undefined to resolve it here. */
  private single(it: BatchedLaunch, prepared: PreparedLaunch | null | undefined, stream: number): void {
    try {
      const p =
        prepared !== undefined ? prepared : this.host.launcher.prepare(it.program, it.args, it.scalars);
      if (p) this.host.launcher.launchPrepared(p, it.args, stream);
    } catch (e) {
      const err = this.host.launchError(e, it.label);
      queueMicrotask(() => it.done(err));
      return;
    }
    this.stats.single++;
    this.host.poller.watch(stream, it.done);
  }

  /** Runs items[i, i+GROUP) from a graph when it can; false leaves them to be launched one by one. */
  private tryGroup(items: readonly BatchedLaunch[], i: number, stream: number): boolean {
    const prepared: (PreparedLaunch | null)[] = [];
    let len = 0;
    try {
      for (let k = 0; k < GRAPH_GROUP; k++) {
        const it = items[i + k]!;
        const p = this.host.launcher.prepare(it.program, it.args, it.scalars);
        // An empty launch has nothing to record; too many parameters is reported by its own launch.
        if (!p || p.params.length > SIGNATURE_MAX - 9) return false;
        prepared.push(p);
        len += writeSignature(p, it.args, this.sig, len);
      }
    } catch {
      return false; // launched one by one, which reports the error against its own task
    }
    const hash = this.hash(len);
    let g = this.find(hash, len);
    if (!g && this.seen.has(hash)) {
      g = this.capture(items, i, len) ?? undefined;
      if (g) this.remember(hash, g);
    } else if (!g) {
      if (this.seen.size >= MAX_SEEN) this.seen.clear();
      this.seen.add(hash);
    }
    if (!g) {
      if (++this.misses >= MISSES_BEFORE_SKIP) {
        this.misses = 0;
        this.skip = SKIP_LAUNCHES;
      }
      for (let k = 0; k < GRAPH_GROUP; k++) this.single(items[i + k]!, prepared[k], stream);
      return true;
    }
    this.misses = 0;
    this.stats.graphLaunches++;
    this.stats.graphed += GRAPH_GROUP;
    // One completion for the group: its kernels finish in stream order, so the last one covers all.
    const dones = items.slice(i, i + GRAPH_GROUP).map((it) => it.done);
    g.graph.launch((err) => {
      for (const done of dones) done(err);
    });
    return true;
  }

  /** FNV-1a over the 32-bit words of the first `len` signature numbers. */
  private hash(len: number): number {
    const w = this.sigWords;
    let h = 0x811c9dc5;
    for (let k = 0, n = len * 2; k < n; k++) h = Math.imul(h ^ w[k]!, 16777619);
    return h >>> 0;
  }

  private find(hash: number, len: number): Graph | undefined {
    const list = this.graphs.get(hash);
    if (!list) return undefined;
    outer: for (const g of list) {
      if (g.signature.length !== len) continue;
      for (let k = 0; k < len; k++) if (!Object.is(g.signature[k], this.sig[k])) continue outer;
      return g;
    }
    return undefined;
  }

  /** Records the group as a graph (nothing runs while it is captured); null when that failed. */
  private capture(items: readonly BatchedLaunch[], i: number, len: number): Graph | null {
    try {
      const graph = this.host.capture((launch) => {
        for (let k = 0; k < GRAPH_GROUP; k++) {
          const it = items[i + k]!;
          launch(it.program, it.args, it.scalars);
        }
      });
      this.stats.captures++;
      return { graph, signature: this.sig.slice(0, len) };
    } catch {
      this.stats.captureFailures++; // the launches go one by one, and each reports its own error
      return null;
    }
  }

  /** Keeps a recorded graph; past MAX_GRAPHS the oldest goes (destroyed: its device memory is freed). */
  private remember(hash: number, g: Graph): void {
    if (this.graphCount >= MAX_GRAPHS) {
      const [oldHash, list] = this.graphs.entries().next().value as [number, Graph[]];
      this.graphs.delete(oldHash);
      this.graphCount -= list.length;
      for (const old of list) old.graph.destroy();
    }
    const list = this.graphs.get(hash);
    if (list) list.push(g);
    else this.graphs.set(hash, [g]);
    this.graphCount++;
  }
}
