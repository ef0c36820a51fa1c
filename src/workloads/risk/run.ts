/**
 * The risk workloads as library calls on a Runtime: `priceOption` (European or arithmetic-Asian
 * option by Monte Carlo) and `portfolioVar` (VaR and expected shortfall by full revaluation). Both take
 * JSON parameters (validated first) and return JSON results; the work goes through rt.submit in
 * stream-range tasks, so the scheduler places them on whatever devices are open.
 */
import type { HostArray } from '../../core/dtype.js';
import type { TensorDesc } from '../../devices/device.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { TaskHandle } from '../../runtime/task.js';
import { mcRows, mcScalars } from '../../kernels/mc_common/def.js';
import { blackScholes } from '../../kernels/mc_common/black-scholes.js';
import {
  addPartialRows,
  estimate,
  mcSpec,
  paths,
  streamCount,
  type McPartial,
} from '../../kernels/mc_common/engine.js';
import { portfolioValue } from '../../kernels/mc_var/engine.js';
import { packPortfolio } from '../../kernels/mc_var/layout.js';
import {
  boundedTaskCount,
  constraint,
  parallelSlots,
  placement,
  requireDevice,
  settleAll,
} from '../tasks.js';
import { validateOptionParams, validateVarParams } from './params.js';
import { riskFigures, type RiskFigures } from './var.js';

export interface OptionResult {
  type: 'european' | 'asian';
  right: 'call' | 'put';
  price: number;
  stdError: number;
  /** Black–Scholes price for a European option, else null. */
  analytic: number | null;
  paths: number;
  antithetic: boolean;
  seed: number;
  tasks: number;
  devices: Record<string, number>;
  seconds: number;
  pathsPerSecond: number;
}

/**
 * Enough tasks to occupy every eligible queue, but none smaller than 16k streams, and enough that
 * none runs longer than its device's budget (boundedTaskCount: a device cannot be handed to another
 * tenant mid-task). An explicit `tasks` is used as given.
 */
function taskCount(requested: number | null, queues: number, streams: number, bounded: number): number {
  const spread = Math.max(Math.min(queues, Math.ceil(streams / 16384)), bounded);
  return Math.max(1, Math.min(streams, requested ?? spread));
}

export async function priceOption(rt: Runtime, params: unknown): Promise<OptionResult> {
  const cfg = validateOptionParams(params);
  const op = cfg.kind === 'european' ? 'mc_european' : 'mc_asian';
  requireDevice(rt, op, cfg.device);
  const queues = parallelSlots(rt, op, cfg.device);
  const spec = mcSpec(cfg);
  const streams = streamCount(spec);
  const flops = rt.kernels.get(op).def.cost({}, mcScalars(spec, 0, streams)).flops;
  const tasks = taskCount(cfg.tasks, queues, streams, boundedTaskCount(rt, op, cfg.device, flops));
  const per = Math.ceil(streams / tasks);
  const t0 = performance.now();
  const outs = [];
  const handles: TaskHandle[] = [];
  for (let first = 0; first < streams; first += per) {
    const n = Math.min(per, streams - first);
    const out = rt.tensor([mcRows(n), 3], 'f32');
    outs.push(out);
    handles.push(
      rt.submit({
        kernel: op,
        args: { out },
        scalars: mcScalars(spec, first, n),
        name: `${op}[${first}+${n}]`,
        ...constraint(cfg.device),
      }),
    );
  }
  // The reads go in with the tasks: each starts as soon as its task completes (no extra turn between).
  const reads = outs.map((o) => rt.read(o));
  try {
    // A read settles only after its task (it reads what the task wrote), so when all goes well the
    // reads alone are awaited; a failure waits for every task and reports the first failed one, as
    // settleAll does. Promise.all handles every read's rejection, so none is left unhandled. (No
    // allSettled records and no catch promise per read: a price's garbage is what scavenges copy.)
    let parts: HostArray[];
    try {
      parts = await Promise.all(reads);
    } catch (e) {
      await settleAll(handles);
      throw e;
    }
    // Rows summed in place (a 2^26-path price has 4096 of them; an object per row would cost more
    // than the kernel), in a small function the JIT optimizes early.
    const total: McPartial = { sum: 0, sumSq: 0, count: 0 };
    for (const o of parts) addPartialRows(total, o);
    const { price, stdError } = estimate(spec, total);
    const seconds = (performance.now() - t0) / 1000;
    const n = paths(spec);
    return {
      type: cfg.kind,
      right: cfg.right,
      price,
      stdError,
      analytic: cfg.kind === 'european' ? blackScholes(cfg) : null,
      paths: n,
      antithetic: cfg.antithetic,
      seed: cfg.seed,
      tasks: handles.length,
      devices: placement(handles),
      seconds,
      pathsPerSecond: n / seconds,
    };
  } finally {
    for (const o of outs) rt.free(o);
  }
}

export interface VarResult extends RiskFigures {
  confidence: number;
  horizon: number;
  scenarios: number;
  portfolioValue: number;
  seed: number;
  tasks: number;
  devices: Record<string, number>;
  seconds: number;
  scenariosPerSecond: number;
}

export async function portfolioVar(rt: Runtime, params: unknown): Promise<VarResult> {
  const cfg = validateVarParams(params);
  requireDevice(rt, 'mc_var', cfg.device);
  const queues = parallelSlots(rt, 'mc_var', cfg.device);
  const pf = cfg.portfolio;
  const v0 = portfolioValue(pf, pf.spot, 0);
  // The op's own cost model prices the whole run (it reads only the losses' length).
  const flops = rt.kernels
    .get('mc_var')
    .def.cost(
      { losses: { shape: [cfg.scenarios], dtype: 'f32' } as unknown as TensorDesc },
      { assets: pf.assets, positions: pf.positions },
    ).flops;
  const spread = Math.max(
    Math.min(queues, Math.ceil(cfg.scenarios / 8192)),
    boundedTaskCount(rt, 'mc_var', cfg.device, flops),
  );
  const tasks = Math.max(1, Math.min(cfg.scenarios, cfg.tasks ?? spread));
  const per = Math.ceil(cfg.scenarios / tasks);
  const t0 = performance.now();
  const packed = rt.tensor([packPortfolio(pf).length], 'f32', packPortfolio(pf));
  const outs = [];
  const handles: TaskHandle[] = [];
  for (let first = 0; first < cfg.scenarios; first += per) {
    const n = Math.min(per, cfg.scenarios - first);
    const losses = rt.tensor([n], 'f32');
    outs.push(losses);
    const scalars = {
      first,
      assets: pf.assets,
      positions: pf.positions,
      horizon: cfg.horizon,
      rate: pf.rate,
      v0,
      k0: cfg.seed % 2 ** 32,
      k1: Math.floor(cfg.seed / 2 ** 32),
    };
    handles.push(
      rt.submit({
        kernel: 'mc_var',
        args: { portfolio: packed, losses },
        scalars,
        name: `mc_var[${first}+${n}]`,
        ...constraint(cfg.device),
      }),
    );
  }
  try {
    await settleAll(handles);
    const all = new Float64Array(cfg.scenarios);
    let o = 0;
    for (const part of await Promise.all(outs.map((t) => rt.read(t)))) {
      all.set(part, o);
      o += part.length;
    }
    const figures = riskFigures(all, cfg.confidence);
    const seconds = (performance.now() - t0) / 1000;
    return {
      ...figures,
      confidence: cfg.confidence,
      horizon: cfg.horizon,
      scenarios: cfg.scenarios,
      portfolioValue: v0,
      seed: cfg.seed,
      tasks: handles.length,
      devices: placement(handles),
      seconds,
      scenariosPerSecond: cfg.scenarios / seconds,
    };
  } finally {
    rt.free(packed);
    for (const t of outs) rt.free(t);
  }
}
