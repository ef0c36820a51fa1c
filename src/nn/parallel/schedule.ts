/**
 * Pipeline schedules: the order in which each stage runs the forward (F) and backward (B) passes of
 * m micro-batches, and an event simulation of them with per-stage times. GPipe runs every forward,
 * then every backward (each stage holds m micro-batches' activations); 1F1B (PipeDream-Flush, Megatron's
 * default) runs p − 1 − s warm-up forwards on stage s, then alternates one forward and one backward, so a
 * stage never holds more than p micro-batches' activations. Both have the same bubble with equal stage
 * times: (p − 1) / (m + p − 1) of each stage's time is idle.
 */
import { TandemError } from '../../core/errors.js';

export type ScheduleKind = '1f1b' | 'gpipe';
export const SCHEDULE_KINDS: readonly ScheduleKind[] = ['1f1b', 'gpipe'];

/** One pass of one micro-batch on a stage. */
export interface PipeOp {
  readonly kind: 'F' | 'B';
  readonly micro: number;
}

function requireCounts(stages: number, micro: number): void {
  if (!Number.isInteger(stages) || stages < 1)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `pipeline: stages must be a positive integer, got ${stages}`,
    );
  if (!Number.isInteger(micro) || micro < 1)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `pipeline: micro-batches must be a positive integer, got ${micro}`,
    );
}

export function requireScheduleKind(kind: string): ScheduleKind {
  if (!(SCHEDULE_KINDS as readonly string[]).includes(kind))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `pipeline: unknown schedule ${JSON.stringify(kind)}; expected one of ${SCHEDULE_KINDS.join(', ')}`,
    );
  return kind as ScheduleKind;
}

/** The passes stage `stage` (0-based) of `stages` runs, in order, for `micro` micro-batches. */
export function stageOrder(kind: ScheduleKind, stages: number, micro: number, stage: number): PipeOp[] {
  requireCounts(stages, micro);
  const ops: PipeOp[] = [];
  if (kind === 'gpipe') {
    for (let j = 0; j < micro; j++) ops.push({ kind: 'F', micro: j });
    for (let j = 0; j < micro; j++) ops.push({ kind: 'B', micro: j });
    return ops;
  }
  const warm = Math.min(stages - 1 - stage, micro);
  for (let j = 0; j < warm; j++) ops.push({ kind: 'F', micro: j });
  for (let j = 0; j < micro - warm; j++) {
    ops.push({ kind: 'F', micro: warm + j });
    ops.push({ kind: 'B', micro: j });
  }
  for (let j = micro - warm; j < micro; j++) ops.push({ kind: 'B', micro: j });
  return ops;
}

export function scheduleOrders(kind: ScheduleKind, stages: number, micro: number): PipeOp[][] {
  return Array.from({ length: stages }, (_, s) => stageOrder(kind, stages, micro, s));
}

/** The pass `op` of stage `s` needs, from another stage (null: none, or only its own earlier passes). */
function crossDependency(op: PipeOp, s: number, stages: number): { stage: number; op: PipeOp } | null {
  if (op.kind === 'F') return s === 0 ? null : { stage: s - 1, op };
  return s === stages - 1 ? null : { stage: s + 1, op };
}

const key = (s: number, op: PipeOp): string => `${s}${op.kind}${op.micro}`;

/**
 * One order in which a single host can submit every pass so that each pass comes after the passes it
 * reads from (the previous stage's forward, the next stage's backward), keeping each stage's own
 * order: the task graph of a training step, submitted front to back.
 */
export function submissionOrder(orders: readonly (readonly PipeOp[])[]): { stage: number; op: PipeOp }[] {
  const stages = orders.length;
  const next = new Array<number>(stages).fill(0);
  const done = new Set<string>();
  const out: { stage: number; op: PipeOp }[] = [];
  const total = orders.reduce((n, o) => n + o.length, 0);
  while (out.length < total) {
    let progressed = false;
    for (let s = 0; s < stages; s++) {
      const op = orders[s]![next[s]!];
      if (op === undefined) continue;
      const dep = crossDependency(op, s, stages);
      if (dep !== null && !done.has(key(dep.stage, dep.op))) continue;
      if (op.kind === 'B' && s === stages - 1 && !done.has(key(s, { kind: 'F', micro: op.micro }))) continue;
      out.push({ stage: s, op });
      done.add(key(s, op));
      next[s]!++;
      progressed = true;
    }
    if (!progressed) throw new TandemError('TANDEM_ERR_INTERNAL', 'pipeline: the schedule deadlocks');
  }
  return out;
}

export interface StageTimes {
  /** Forward time of one micro-batch on each stage. */
  readonly forward: readonly number[];
  /** Backward time of one micro-batch on each stage. */
  readonly backward: readonly number[];
  /** Time to move one activation (or its gradient) between neighbouring stages. */
  readonly transfer?: number;
}

export interface ScheduledOp extends PipeOp {
  readonly stage: number;
  readonly start: number;
  readonly end: number;
}

export interface ScheduleSimulation {
  readonly makespan: number;
  /** Busy time of each stage. */
  readonly busy: readonly number[];
  /** Idle fraction of each stage: 1 − busy / makespan. */
  readonly idle: readonly number[];
  /** Idle time over all stages ÷ (stages × makespan). */
  readonly bubble: number;
  /** Most micro-batches whose forward ran and backward had not yet finished, per stage. */
  readonly peakInFlight: readonly number[];
  readonly ops: readonly ScheduledOp[];
}

/** (p − 1) / (m + p − 1): the idle fraction of GPipe and 1F1B with equal stage times and free transfers. */
export function theoreticalBubble(stages: number, micro: number): number {
  requireCounts(stages, micro);
  return (stages - 1) / (micro + stages - 1);
}

/**
 * Runs the schedule on ideal stages (each runs its passes in order, one at a time, as soon as the pass
 * it reads from is done and moved): the makespan, each stage's idle share and peak activations held.
 */
export function simulateSchedule(
  kind: ScheduleKind,
  stages: number,
  micro: number,
  times: StageTimes,
): ScheduleSimulation {
  requireCounts(stages, micro);
  if (times.forward.length !== stages || times.backward.length !== stages)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `pipeline: give ${stages} forward and backward times, got ${times.forward.length} and ${times.backward.length}`,
    );
  const transfer = times.transfer ?? 0;
  const orders = scheduleOrders(kind, stages, micro);
  const end = new Map<string, number>();
  const free = new Array<number>(stages).fill(0);
  const ops: ScheduledOp[] = [];
  for (const { stage: s, op } of submissionOrder(orders)) {
    const dep = crossDependency(op, s, stages);
    const ready = dep === null ? 0 : end.get(key(dep.stage, dep.op))! + transfer;
    const start = Math.max(free[s]!, ready);
    const length = op.kind === 'F' ? times.forward[s]! : times.backward[s]!;
    const finish = start + length;
    free[s] = finish;
    end.set(key(s, op), finish);
    ops.push({ ...op, stage: s, start, end: finish });
  }
  const makespan = Math.max(...free);
  const busy = Array.from({ length: stages }, (_, s) => micro * (times.forward[s]! + times.backward[s]!));
  const idle = busy.map((b) => (makespan > 0 ? 1 - b / makespan : 0));
  const totalBusy = busy.reduce((a, b) => a + b, 0);
  const peakInFlight = orders.map((order) => {
    let held = 0;
    let peak = 0;
    for (const op of order) {
      held += op.kind === 'F' ? 1 : -1;
      peak = Math.max(peak, held);
    }
    return peak;
  });
  return {
    makespan,
    busy,
    idle,
    bubble: makespan > 0 ? 1 - totalBusy / (stages * makespan) : 0,
    peakInFlight,
    ops,
  };
}
