/**
 * Simulation half of `tandem bench sched`: tiled Cholesky on a simulated CPU+GPU machine from StarPU's
 * published per-kernel timings, every policy's makespan against the lower bound, and the cost of one
 * dmda placement decision.
 */
import { STARPU_TABLES, tileFlops, type TimingTable } from '../src/devices/sim/tables.js';
import { PerfModels } from '../src/runtime/perf-model.js';
import { createPolicy } from '../src/runtime/policies/index.js';
import { areaBoundUs, criticalPathUs } from '../src/runtime/simulate/bounds.js';
import { decisionCostUs } from '../src/runtime/simulate/decision-cost.js';
import { simPlatform } from '../src/runtime/simulate/platform.js';
import { simulate } from '../src/runtime/simulate/simulator.js';
import { choleskyGraph, opCounts } from '../src/workloads/tiled/graph.js';

export interface SimRow {
  readonly table: string;
  readonly policy: string;
  readonly makespanMs: number;
  readonly ratio: number;
  readonly gflops: number;
  readonly transfers: number;
  readonly cpuTasks: number;
  readonly gpuTasks: number;
  readonly busyCpu: number;
  readonly busyGpu: number;
}

export interface SimReport {
  readonly table: string;
  readonly description: string;
  readonly nt: number;
  readonly cpus: number;
  readonly gpus: number;
  readonly criticalPathMs: number;
  readonly areaBoundMs: number;
  readonly lowerBoundMs: number;
  readonly rows: SimRow[];
}

export const SIM_POLICIES = ['eager', 'prio', 'ws', 'dmda', 'dmdas', 'gpu-only', 'cpu-only'] as const;

/** A calibration run on a small instance (as StarPU calibrates its models before measuring). */
function calibratedModels(table: TimingTable, cpus: number, gpus: number): PerfModels {
  const models = new PerfModels();
  simulate(choleskyGraph(8), simPlatform(table, cpus, gpus), {
    policy: createPolicy('eager'),
    models,
    learn: true,
    noise: 0.02,
    seed: 3,
  });
  return models;
}

export function runSimulation(tableName: string, nt: number, cpus: number, gpus: number): SimReport {
  const table = STARPU_TABLES[tableName];
  if (!table) throw new Error(`unknown table ${tableName}; known: ${Object.keys(STARPU_TABLES).join(', ')}`);
  const g = choleskyGraph(nt);
  const cp = criticalPathUs(g, table, ['cpu', 'gpu']);
  const area = areaBoundUs(opCounts(g), table, cpus, gpus).us;
  const lb = Math.max(cp, area);
  const flops = tileFlops('potrf', table.tile * nt); // n³/3 of the whole matrix
  const rows: SimRow[] = [];
  for (const p of SIM_POLICIES) {
    const only = p === 'gpu-only' ? 'gpu' : p === 'cpu-only' ? 'cpu' : undefined;
    const r = simulate(g, simPlatform(table, cpus, gpus), {
      // The one-device-type baselines get the best policy we have, so they are not strawmen.
      policy: createPolicy(only ? 'dmdas' : p),
      models: calibratedModels(table, cpus, gpus),
      learn: true,
      noise: 0.02,
      seed: 11,
      ...(only ? { only } : {}),
    });
    const count = (type: string): number => Object.values(r.byType[type] ?? {}).reduce((s, x) => s + x, 0);
    rows.push({
      table: tableName,
      policy: p,
      makespanMs: r.makespanUs / 1000,
      ratio: r.makespanUs / lb,
      gflops: flops / r.makespanUs / 1000,
      transfers: r.transfers,
      cpuTasks: count('cpu'),
      gpuTasks: count('gpu'),
      busyCpu: r.busy['cpu'] ?? 0,
      busyGpu: r.busy['gpu'] ?? 0,
    });
  }
  return {
    table: tableName,
    description: table.description,
    nt,
    cpus,
    gpus,
    criticalPathMs: cp / 1000,
    areaBoundMs: area / 1000,
    lowerBoundMs: lb / 1000,
    rows,
  };
}

export interface CostReport {
  readonly devices: number;
  readonly queued: number;
  readonly dmdaUs: number;
  readonly dmdasUs: number;
  readonly dmdasTracedUs: number;
}

export function runDecisionCost(): CostReport {
  return {
    devices: 4,
    queued: 10_000,
    dmdaUs: decisionCostUs({ devices: 4, queued: 10_000, sorted: false, rounds: 5 }),
    dmdasUs: decisionCostUs({ devices: 4, queued: 10_000, sorted: true, rounds: 5 }),
    dmdasTracedUs: decisionCostUs({ devices: 4, queued: 10_000, sorted: true, explain: true, rounds: 5 }),
  };
}
