/**
 * Discrete-event simulation of a task graph on a simulated platform, driven by the same
 * SchedulerPolicy objects as the real executor. Time is a number advanced from event to event (no
 * sleeping): task durations come from the timing table (with optional noise and timing spikes),
 * transfers from the bus model with one FIFO per link, so contention for the bus is felt.
 *
 * Data: each tile has a bitmask of memory nodes holding a valid copy and the time its copy on each
 * node arrives; a completed task leaves the tiles it wrote valid only on its node (MSI).
 */
import type { TileOp } from '../../devices/sim/tables.js';
import type { PerfModels, TaskShape } from '../perf-model.js';
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from '../policies/policy.js';
import { Heap } from '../../core/queues.js';
import type { SimPlatform, SimWorker } from './platform.js';

export interface SimGraphTask {
  readonly id: number;
  readonly op: TileOp;
  readonly reads: readonly number[];
  readonly writes: readonly number[];
  readonly deps: readonly number[];
  readonly priority: number;
}

export interface SimGraph {
  readonly tasks: readonly SimGraphTask[];
  readonly tiles: number;
}

export interface SimOptions {
  readonly policy: SchedulerPolicy;
  /** Performance models the policy reads (and that learn from the run when `learn`). */
  readonly models: PerfModels;
  readonly learn?: boolean;
  /** Restrict every task to one device type (GPU-only, CPU-only baselines). */
  readonly only?: 'cpu' | 'gpu';
  /** Relative spread of run times (uniform ±noise); 0 = the table's means exactly. */
  readonly noise?: number;
  /**
   * Fraction of runs whose *measured* time is a spike of `spikeFactor` (StarPU issue #50: cuBLAS
   * GEMMs of ~190 µs recorded at 70-100 ms): the run itself took its normal time, the model is fed
   * the spike.
   */
  readonly spikeRate?: number;
  readonly spikeFactor?: number;
  readonly seed?: number;
}

export interface SimResult {
  readonly policy: string;
  readonly makespanUs: number;
  readonly tasks: number;
  readonly byType: Record<string, Record<string, number>>;
  readonly transfers: number;
  readonly bytesMoved: number;
  /** Busy fraction per worker type. */
  readonly busy: Record<string, number>;
}

class Task implements SchedTask {
  readonly seq: number;
  placement: string | undefined;
  pending: number;
  readonly succ: Task[] = [];
  constructor(
    readonly g: SimGraphTask,
    readonly eligible: readonly number[],
  ) {
    this.seq = g.id;
    this.pending = g.deps.length;
  }
  get id(): number {
    return this.g.id;
  }
  get op(): string {
    return this.g.op;
  }
  get priority(): number {
    return this.g.priority;
  }
}

interface Event {
  readonly at: number;
  readonly seq: number;
  readonly task: Task;
  readonly worker: SimWorker;
  /** The run time as measured (what the models learn; differs from the real one under spikes). */
  readonly durUs: number;
}

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

export function simulate(graph: SimGraph, platform: SimPlatform, opts: SimOptions): SimResult {
  const { workers, bus, table } = platform;
  const tileBytes = table.tile * table.tile * (table.dtype === 'f64' ? 8 : 4);
  const shapes = new Map<string, TaskShape>();
  const shapeOf = (op: string): TaskShape => {
    let s = shapes.get(op);
    if (!s) {
      const w = op === 'gemm' ? 2 : op === 'potrf' ? 1 / 3 : 1;
      const flops = w * table.tile ** 3;
      s = {
        op,
        footprint: `${table.dtype}:${table.tile}`,
        size: flops,
        flops,
        bytes: 3 * tileBytes,
        dtype: table.dtype,
        key: `${op}|${table.dtype}:${table.tile}`,
      };
      shapes.set(op, s);
    }
    return s;
  };
  const slots = workers.map((w) => opts.models.device(`${w.device.info.id}:${w.device.info.name}`));
  const valid = new Int32Array(graph.tiles).fill(1); // everything starts in host memory
  const arrival = new Float64Array(graph.tiles * platform.nodes); // time each copy is usable
  const linkFree = new Float64Array(platform.nodes * platform.nodes);
  let now = 0;
  let transfers = 0;
  let bytesMoved = 0;
  const random = rng(opts.seed ?? 42);

  const srcOf = (tile: number, dst: number): number => {
    const v = valid[tile]!;
    if (v & 1) return 0;
    for (let n = 1; n < platform.nodes; n++) if (n !== dst && v & (1 << n)) return n;
    return 0;
  };
  /** Ensures a copy of `tile` on `node` is valid or on its way; returns when it is usable. */
  const fetch = (tile: number, node: number): number => {
    const k = tile * platform.nodes + node;
    if (valid[tile]! & (1 << node)) return arrival[k]!;
    const src = srcOf(tile, node);
    const link = src * platform.nodes + node;
    const start = Math.max(now, linkFree[link]!, arrival[tile * platform.nodes + src]!);
    const end = start + bus.transferUs(tileBytes, src, node);
    linkFree[link] = end;
    valid[tile]! |= 1 << node;
    arrival[k] = end;
    transfers++;
    bytesMoved += tileBytes;
    return end;
  };
  const inputsOf = (t: Task): readonly number[] =>
    t.g.writes.length ? [...t.g.reads, ...t.g.writes] : t.g.reads;

  const ctx: PolicyContext = {
    workers,
    now: () => now,
    cost: (t) => {
      const s = shapeOf(t.op);
      return { flops: s.flops, bytes: s.bytes };
    },
    missingBytes: (t, w) => {
      let b = 0;
      for (const tile of inputsOf(t as Task)) if (!(valid[tile]! & (1 << w.node.index))) b += tileBytes;
      return b;
    },
    transferUs: (t, w) => {
      let us = 0;
      const dst = w.node.index;
      for (const tile of inputsOf(t as Task)) {
        if (valid[tile]! & (1 << dst)) continue;
        const src = srcOf(tile, dst);
        us += Math.max(0, linkFree[src * platform.nodes + dst]! - now) + bus.transferUs(tileBytes, src, dst);
      }
      return us;
    },
    expectedUs: (t, w) => opts.models.estimate(shapeOf(t.op), slots[w.index]!).us,
    prefetch: (t, w) => {
      for (const tile of inputsOf(t as Task)) fetch(tile, w.node.index);
    },
    wake: () => pump(),
    observed: () => false,
  };
  const policy = opts.policy;
  policy.attach(ctx);

  const eligibleBy = new Map<string, number[]>();
  const eligible = (only: string | undefined): number[] => {
    const key = only ?? 'all';
    let e = eligibleBy.get(key);
    if (!e) eligibleBy.set(key, (e = workers.filter((w) => !only || w.type === only).map((w) => w.index)));
    return e;
  };
  const tasks = graph.tasks.map((g) => new Task(g, eligible(opts.only)));
  for (const t of tasks) for (const d of t.g.deps) tasks[d]!.succ.push(t);

  const events = new Heap<Event>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  let evSeq = 0;
  const busyUs = new Float64Array(workers.length);
  const byType: Record<string, Record<string, number>> = {};
  let pumping = false;
  let again = false;

  function start(t: Task, w: SimWorker): void {
    w.inflight++;
    policy.onStart?.(t, w);
    let ready = now;
    for (const tile of inputsOf(t)) ready = Math.max(ready, fetch(tile, w.node.index));
    let dur = table.us[t.g.op][w.type];
    if (opts.noise) dur *= 1 + opts.noise * (2 * random() - 1);
    const measured = opts.spikeRate && random() < opts.spikeRate ? dur * (opts.spikeFactor ?? 100) : dur;
    busyUs[w.index]! += dur;
    events.push({ at: ready + dur, seq: evSeq++, task: t, worker: w, durUs: measured });
  }

  function pump(): void {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    do {
      again = false;
      if (policy.pending() === 0) break;
      for (const w of workers) {
        while (w.inflight < w.queue.depth) {
          const t = policy.pop(w as WorkerSlot) as Task | undefined;
          if (!t) break;
          start(t, w);
        }
      }
    } while (again);
    pumping = false;
  }

  for (const t of tasks) if (t.pending === 0) policy.push(t);
  pump();
  let done = 0;
  for (let e = events.pop(); e; e = events.pop()) {
    now = e.at;
    const { task: t, worker: w } = e;
    w.inflight--;
    for (const tile of t.g.writes) {
      valid[tile] = 1 << w.node.index;
      arrival[tile * platform.nodes + w.node.index] = now;
    }
    if (opts.learn) opts.models.record(shapeOf(t.g.op), slots[w.index]!, e.durUs);
    const row = (byType[w.type] ??= {});
    row[t.g.op] = (row[t.g.op] ?? 0) + 1;
    done++;
    policy.onComplete?.(t, w, e.durUs, true);
    for (const s of t.succ) if (--s.pending === 0) policy.push(s);
    pump();
  }
  if (done !== tasks.length) throw new Error(`simulation stalled: ${done} of ${tasks.length} tasks ran`);
  const busy: Record<string, number> = {};
  for (const type of ['cpu', 'gpu']) {
    const ws = workers.filter((w) => w.type === type);
    if (ws.length) busy[type] = ws.reduce((s, w) => s + busyUs[w.index]!, 0) / (ws.length * now);
  }
  return { policy: policy.name, makespanUs: now, tasks: done, byType, transfers, bytesMoved, busy };
}
