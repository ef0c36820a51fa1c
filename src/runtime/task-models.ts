/**
 * The runtime's view of its performance and bus models for the policies: a task's model key
 * (op + data footprint) is computed once per task, each worker maps to its device's model slot, and
 * measured run times flow back into the history when tasks complete.
 */
import type { Device } from '../devices/device.js';
import type { Coherence } from '../memory/coherence.js';
import type { BusModel } from './bus-model.js';
import { readsFrom } from './graph.js';
import type { DevicePeaks, PerfModels, TaskShape } from './perf-model.js';
import type { WorkerSlot } from './policies/policy.js';
import type { Task } from './task.js';

/** Fixed launch cost of the roofline prior (µs): a worker-thread message or a driver launch. */
const LAUNCH_US: Readonly<Record<string, number>> = { cpu: 3, cuda: 8, webgpu: 30, sim: 1 };

export function deviceKey(d: Device): string {
  return `${d.info.id}:${d.info.name}`;
}

/** Peaks of one queue of the device: a CPU's measured rate covers all its worker threads together. */
export function queuePeaks(d: Device): DevicePeaks {
  const share = d.info.kind === 'cpu' ? Math.max(1, d.queues.length) : 1;
  const flops: Record<string, number | undefined> = {};
  for (const [k, v] of Object.entries(d.info.peakFlops)) if (v) flops[k] = v / share;
  return {
    flops,
    bandwidth: d.info.memoryBandwidth ? d.info.memoryBandwidth / share : undefined,
    launchUs: LAUNCH_US[d.info.kind] ?? 10,
  };
}

/** Above this many tensors a task's footprint is their count and bytes, not every shape. */
const FOOTPRINT_MAX_TENSORS = 64;

/** Tasks without tensors (barriers, noop) share one shape per op: no string building per task. */
const bareShapes = new Map<string, TaskShape>();

export function taskShape(task: Task): TaskShape {
  if (task.tensors.length === 0 && !task.cost?.flops) {
    let s = bareShapes.get(task.op);
    if (!s)
      bareShapes.set(
        task.op,
        (s = { op: task.op, footprint: '', size: 0, flops: 0, bytes: 0, dtype: 'f32', key: `${task.op}|` }),
      );
    return s;
  }
  let fp = '';
  let dtype = 'f32';
  if (task.tensors.length > FOOTPRINT_MAX_TENSORS) {
    // A sequence carries all its steps' tensors: its count and total bytes name it well enough, and
    // spelling out a thousand shapes per task would cost more than the task.
    let bytes = 0;
    for (const t of task.tensors) bytes += t.bytes;
    dtype = task.tensors[0]!.dtype;
    fp = `${task.tensors.length} tensors:${bytes}B`;
  } else
    for (let i = 0; i < task.tensors.length; i++) {
      const t = task.tensors[i]!;
      if (i === 0) dtype = t.dtype;
      fp += `${i ? ',' : ''}${t.dtype}:${t.shape.join('x')}`;
    }
  const flops = task.cost?.flops ?? 0;
  const bytes = task.cost?.bytes ?? 0;
  return {
    op: task.op,
    footprint: fp,
    size: flops > 0 ? flops : bytes,
    flops,
    bytes,
    dtype,
    key: `${task.op}|${fp}`,
  };
}

export class TaskModels {
  private slots: number[] = [];

  constructor(
    readonly perf: PerfModels,
    readonly bus: BusModel,
    private readonly coherence: Coherence,
    private readonly workers: readonly WorkerSlot[],
  ) {}

  /** Registers the workers' devices with the models (call once the devices are open). */
  bindWorkers(): void {
    this.slots = this.workers.map((w) => this.perf.device(deviceKey(w.device), queuePeaks(w.device)));
  }

  /** Computed once per task and kept on it (a WeakMap of 100,000s of live tasks slows every GC). */
  shape(task: Task): TaskShape {
    return (task.modelShape ??= taskShape(task));
  }

  expectedUs(task: Task, w: WorkerSlot): number {
    const slot = this.slots[w.index];
    return slot === undefined ? NaN : this.perf.estimate(this.shape(task), slot).us;
  }

  transferUs(task: Task, w: WorkerSlot): number {
    let us = 0;
    const dst = w.node.index;
    for (let i = 0; i < task.tensors.length; i++) {
      if (!readsFrom(task.modes[i]!)) continue;
      const t = task.tensors[i]!;
      if (this.coherence.isLocal(t, w.node)) continue;
      let src = 0; // an unwritten tensor starts as zeros in host memory
      const reps = t.replicas;
      for (let j = 0; j < reps.length; j++) {
        const r = reps[j];
        if (r && r.state !== 'I') {
          src = j;
          break;
        }
      }
      us += this.bus.transferUs(t.bytes, src, dst);
    }
    return us;
  }

  record(task: Task, w: WorkerSlot, us: number): void {
    const slot = this.slots[w.index];
    if (slot !== undefined) this.perf.record(this.shape(task), slot, us);
  }
}
