/**
 * Cost of one dmda/dmdas placement decision (push: estimate every candidate, pick, queue, prefetch)
 * with `devices` devices and `queued` tasks already waiting in the policy, through the real
 * performance-model lookups. Returns µs per decision (the best of a few rounds: this measures the
 * code, not the neighbours on a shared machine).
 */
import { STARPU_TABLES } from '../../devices/sim/tables.js';
import { PerfModels, type TaskShape } from '../perf-model.js';
import { DmdaPolicy } from '../policies/dmda.js';
import type { PolicyContext, SchedTask } from '../policies/policy.js';
import { simPlatform } from './platform.js';

export interface DecisionCostOptions {
  readonly devices: number;
  readonly queued: number;
  readonly sorted?: boolean;
  readonly explain?: boolean;
  readonly rounds?: number;
}

const OPS = ['potrf', 'trsm', 'syrk', 'gemm'] as const;

export function decisionCostUs(o: DecisionCostOptions): number {
  const table = STARPU_TABLES['sirocco-960']!;
  const p = simPlatform(table, 1, o.devices - 1);
  const models = new PerfModels();
  const slots = p.workers.map((w) => models.device(w.device.info.id));
  const shapes: TaskShape[] = OPS.map((op) => ({
    op,
    footprint: 'f32:960',
    size: 1,
    flops: 1,
    bytes: 1,
    dtype: 'f32',
  }));
  shapes.forEach((s, i) =>
    p.workers.forEach((w, j) => {
      for (let k = 0; k < 3; k++) models.record(s, slots[j]!, table.us[OPS[i]!][w.type]);
    }),
  );
  const opIndex = new Map<string, number>(OPS.map((op, i) => [op, i]));
  let clock = 0;
  const ctx: PolicyContext = {
    workers: p.workers,
    now: () => clock,
    cost: () => ({ flops: 0, bytes: 0 }),
    missingBytes: () => 0,
    // Alternate "data here" and "one tile to move" so the transfer term matters.
    transferUs: (t, w) => ((t.id + w.index) & 1 ? 0 : p.bus.transferUs(3_686_400, 0, w.node.index)),
    expectedUs: (t, w) => models.estimate(shapes[opIndex.get(t.op)!]!, slots[w.index]!).us,
    prefetch: () => undefined,
    wake: () => undefined,
    observed: () => o.explain ?? false,
  };
  const all = p.workers.map((w) => w.index);
  const mk = (id: number): SchedTask => ({
    id,
    op: OPS[id & 3]!,
    priority: id % 97,
    seq: id,
    eligible: all,
    placement: undefined,
  });
  let best = Infinity;
  for (let r = 0; r < (o.rounds ?? 3); r++) {
    const policy = new DmdaPolicy({ sorted: o.sorted ?? true });
    policy.attach(ctx);
    let id = 0;
    for (; id < o.queued; id++) policy.push(mk(id));
    const n = 10_000;
    const tasks = Array.from({ length: n }, (_, i) => mk(id + i));
    const t0 = performance.now();
    for (const t of tasks) {
      clock += 1;
      policy.push(t);
    }
    const us = ((performance.now() - t0) * 1000) / n;
    if (us < best) best = us;
  }
  return best;
}
