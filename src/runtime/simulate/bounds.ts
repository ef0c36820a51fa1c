/**
 * Lower bounds on the makespan of a task graph on CPU cores + GPUs, from the timing table (as StarPU's
 * starpu_bound_compute does): the critical path with every task on its fastest device type, and the
 * area bound: the best fractional split of each op's tasks between the two device types so that both
 * finish together. For two device types the LP has a closed form: at the optimum the CPUs take the ops
 * where they are relatively least slow (smallest t_cpu / t_gpu) first, so a bisection on the makespan
 * with that greedy fill is exact.
 */
import type { SimDeviceType, TileOp, TimingTable } from '../../devices/sim/tables.js';
import type { SimGraph } from './simulator.js';

export function criticalPathUs(g: SimGraph, table: TimingTable, types: readonly SimDeviceType[]): number {
  const finish = new Float64Array(g.tasks.length);
  let cp = 0;
  for (const t of g.tasks) {
    let start = 0;
    for (const d of t.deps) if (finish[d]! > start) start = finish[d]!;
    const dur = Math.min(...types.map((ty) => table.us[t.op][ty]));
    finish[t.id] = start + dur;
    if (finish[t.id]! > cp) cp = finish[t.id]!;
  }
  return cp;
}

export interface AreaBound {
  readonly us: number;
  /** Tasks of each op on the CPUs in the optimal fractional split. */
  readonly cpuShare: Record<string, number>;
}

export function areaBoundUs(
  counts: Readonly<Record<TileOp, number>>,
  table: TimingTable,
  cpus: number,
  gpus: number,
): AreaBound {
  const ops = (Object.keys(counts) as TileOp[]).filter((o) => counts[o] > 0);
  const total = (type: SimDeviceType): number => ops.reduce((s, o) => s + counts[o] * table.us[o][type], 0);
  if (gpus === 0)
    return { us: total('cpu') / cpus, cpuShare: Object.fromEntries(ops.map((o) => [o, counts[o]])) };
  if (cpus === 0) return { us: total('gpu') / gpus, cpuShare: {} };
  const order = [...ops].sort(
    (a, b) => table.us[a].cpu / table.us[a].gpu - table.us[b].cpu / table.us[b].gpu,
  );
  const split = (T: number): { ok: boolean; share: Record<string, number> } => {
    let cap = cpus * T;
    let gpuLoad = 0;
    const share: Record<string, number> = {};
    for (const o of order) {
      const x = Math.min(counts[o], cap / table.us[o].cpu);
      cap -= x * table.us[o].cpu;
      share[o] = x;
      gpuLoad += (counts[o] - x) * table.us[o].gpu;
    }
    return { ok: gpuLoad <= gpus * T * (1 + 1e-12), share };
  };
  let lo = 0;
  let hi = total('gpu') / gpus;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (split(mid).ok) hi = mid;
    else lo = mid;
  }
  return { us: hi, cpuShare: split(hi).share };
}
