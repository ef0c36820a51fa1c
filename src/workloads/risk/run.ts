/**
 * The risk workloads as library calls on a Runtime: `priceOption` (European or arithmetic-Asian
 * option by Monte Carlo) and `portfolioVar` (VaR and expected shortfall by full revaluation). Both take
 * JSON parameters (validated first) and return JSON results; the work goes through rt.submit in
 * stream-range tasks, so the scheduler places them on whatever devices are open.
 */
import type { HostArray } from '../../core/dtype.js';
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
  abortError,
  constraint,
  gpuEligible,
  parallelSlots,
  placement,
  requireDevice,
  runWindowed,
  settleAll,
  type RunOptions,
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
 * The most work one task may hold (streams × path steps; a European stream is 4 samples of one step):
 * about 2-3 ms on one CPU core of the shared VMs (~1.8e6 European streams/s), about 1 ms on an H200.
 * A cancel or a deadline takes effect at a task boundary, and a device cannot be handed to another
 * tenant mid-task (the runtime's fair sharing picks between tasks), so a huge job (2^40 paths) is cut
 * into many such tasks instead of one per device, and submitted a window at a time (runWindowed).
 */
const MAX_TASK_WORK_CPU = 2 ** 14;
const MAX_TASK_WORK_GPU = 2 ** 26;

/** Enough tasks to occupy every eligible queue, but none smaller than 16k streams nor bigger than maxStreams. */
function taskCount(requested: number | null, queues: number, streams: number, maxStreams: number): number {
  const n = Math.max(1, Math.min(streams, requested ?? Math.min(queues, Math.ceil(streams / 16384))));
  return Math.max(n, Math.ceil(streams / maxStreams));
}

/**
 * Tasks in flight at once for a job cut into more tasks than queues: two per CPU queue (one running,
 * the next already there: with tasks of a few ms the worker would otherwise idle for every round trip
 * through the host; a cancel waits for at most two), two more when a GPU may run them (its next launch
 * is queued while one runs, so the GPU does not idle during each read-back).
 */
function windowSize(queues: number, gpu: boolean): number {
  return 2 * queues + (gpu ? 2 : 0);
}

export async function priceOption(
  rt: Runtime,
  params: unknown,
  opts: RunOptions = {},
): Promise<OptionResult> {
  const cfg = validateOptionParams(params);
  const op = cfg.kind === 'european' ? 'mc_european' : 'mc_asian';
  requireDevice(rt, op, cfg.device);
  const queues = parallelSlots(rt, op, cfg.device);
  const spec = mcSpec(cfg);
  const streams = streamCount(spec);
  const gpu = gpuEligible(rt, op, cfg.device);
  const stepsPerStream = spec.kind === 'european' ? 4 : spec.steps;
  const maxStreams = Math.max(1, Math.floor((gpu ? MAX_TASK_WORK_GPU : MAX_TASK_WORK_CPU) / stepsPerStream));
  const per = Math.ceil(streams / taskCount(cfg.tasks, queues, streams, maxStreams));
  const tasks = Math.ceil(streams / per);
  const window = windowSize(queues, gpu);
  if (opts.signal?.aborted) throw abortError(opts.signal);
  if (tasks > window) return priceWindowed(rt, cfg, op, spec, tasks, per, window, opts);
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
        ...(opts.tags ? { tags: opts.tags } : {}),
      }),
    );
  }
  // The reads go in with the tasks: each starts as soon as its task completes (no extra turn between).
  const reads = outs.map((o) => rt.read(o));
  reportTasks(handles, opts.onProgress);
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
    return optionResult(cfg, spec, total, t0, handles.length, placement(handles));
  } finally {
    for (const o of outs) rt.free(o);
  }
}

/** priceOption for a job of more tasks than the window: submitted a window at a time, stoppable between. */
async function priceWindowed(
  rt: Runtime,
  cfg: ReturnType<typeof validateOptionParams>,
  op: string,
  spec: ReturnType<typeof mcSpec>,
  tasks: number,
  per: number,
  window: number,
  opts: RunOptions,
): Promise<OptionResult> {
  const streams = streamCount(spec);
  const t0 = performance.now();
  const total: McPartial = { sum: 0, sumSq: 0, count: 0 };
  const devices = await runWindowed(
    tasks,
    window,
    opts.signal,
    (i) => {
      const first = i * per;
      const n = Math.min(per, streams - first);
      const out = rt.tensor([mcRows(n), 3], 'f32');
      const handle = rt.submit({
        kernel: op,
        args: { out },
        scalars: mcScalars(spec, first, n),
        name: `${op}[${first}+${n}]`,
        ...constraint(cfg.device),
        ...(opts.tags ? { tags: opts.tags } : {}),
      });
      return { handle, result: rt.read(out), release: () => rt.free(out) };
    },
    (i, rows) => {
      addPartialRows(total, rows);
      opts.onProgress?.(i + 1, tasks, 'task');
    },
  );
  return optionResult(cfg, spec, total, t0, tasks, devices);
}

/** The price from the summed partials, with what ran it: one shape for the one-shot and windowed paths. */
function optionResult(
  cfg: ReturnType<typeof validateOptionParams>,
  spec: ReturnType<typeof mcSpec>,
  total: McPartial,
  t0: number,
  tasks: number,
  devices: OptionResult['devices'],
): OptionResult {
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
    tasks,
    devices,
    seconds,
    pathsPerSecond: n / seconds,
  };
}

/** Reports each task's completion to `onProgress` (a failed task counts as no progress: it is reported by the run). */
function reportTasks(handles: readonly TaskHandle[], onProgress: RunOptions['onProgress']): void {
  if (!onProgress) return;
  let done = 0;
  for (const h of handles)
    h.done.then(
      () => onProgress(++done, handles.length, 'task'),
      () => undefined,
    );
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

/** Scenarios one mc_var task may hold: a few ms on one CPU core for a small portfolio (see MAX_TASK_WORK_CPU). */
const MAX_VAR_SCENARIOS_CPU = 2 ** 12;
const MAX_VAR_SCENARIOS_GPU = 2 ** 22;

export async function portfolioVar(rt: Runtime, params: unknown, opts: RunOptions = {}): Promise<VarResult> {
  const cfg = validateVarParams(params);
  requireDevice(rt, 'mc_var', cfg.device);
  const queues = parallelSlots(rt, 'mc_var', cfg.device);
  const gpu = gpuEligible(rt, 'mc_var', cfg.device);
  const pf = cfg.portfolio;
  const v0 = portfolioValue(pf, pf.spot, 0);
  const split = Math.max(
    1,
    Math.min(cfg.scenarios, cfg.tasks ?? Math.min(queues, Math.ceil(cfg.scenarios / 8192))),
    Math.ceil(cfg.scenarios / (gpu ? MAX_VAR_SCENARIOS_GPU : MAX_VAR_SCENARIOS_CPU)),
  );
  const per = Math.ceil(cfg.scenarios / split);
  const tasks = Math.ceil(cfg.scenarios / per);
  if (opts.signal?.aborted) throw abortError(opts.signal);
  const t0 = performance.now();
  const packed = rt.tensor([packPortfolio(pf).length], 'f32', packPortfolio(pf));
  const scalarsFor = (first: number) => ({
    first,
    assets: pf.assets,
    positions: pf.positions,
    horizon: cfg.horizon,
    rate: pf.rate,
    v0,
    k0: cfg.seed % 2 ** 32,
    k1: Math.floor(cfg.seed / 2 ** 32),
  });
  const outs = [];
  const handles: TaskHandle[] = [];
  const window = windowSize(queues, gpu);
  const all = new Float64Array(cfg.scenarios);
  let devices: Record<string, number> | null = null;
  try {
    if (tasks > window) {
      // A window at a time, each part copied home as it comes: stoppable between tasks.
      devices = await runWindowed(
        tasks,
        window,
        opts.signal,
        (i) => {
          const first = i * per;
          const n = Math.min(per, cfg.scenarios - first);
          const losses = rt.tensor([n], 'f32');
          const handle = rt.submit({
            kernel: 'mc_var',
            args: { portfolio: packed, losses },
            scalars: scalarsFor(first),
            name: `mc_var[${first}+${n}]`,
            ...constraint(cfg.device),
            ...(opts.tags ? { tags: opts.tags } : {}),
          });
          return { handle, result: rt.read(losses), release: () => rt.free(losses) };
        },
        (i, part) => {
          all.set(part, i * per);
          opts.onProgress?.(i + 1, tasks, 'task');
        },
      );
    } else {
      for (let first = 0; first < cfg.scenarios; first += per) {
        const n = Math.min(per, cfg.scenarios - first);
        const losses = rt.tensor([n], 'f32');
        outs.push(losses);
        handles.push(
          rt.submit({
            kernel: 'mc_var',
            args: { portfolio: packed, losses },
            scalars: scalarsFor(first),
            name: `mc_var[${first}+${n}]`,
            ...constraint(cfg.device),
            ...(opts.tags ? { tags: opts.tags } : {}),
          }),
        );
      }
      reportTasks(handles, opts.onProgress);
      await settleAll(handles);
      let o = 0;
      for (const part of await Promise.all(outs.map((t) => rt.read(t)))) {
        all.set(part, o);
        o += part.length;
      }
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
      tasks,
      devices: devices ?? placement(handles),
      seconds,
      scenariosPerSecond: cfg.scenarios / seconds,
    };
  } finally {
    rt.free(packed);
    for (const t of outs) rt.free(t);
  }
}
