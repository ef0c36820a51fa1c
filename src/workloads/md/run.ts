/**
 * `runMd(rt, params)`: the LJ workload on a Runtime. Every step is three tasks (md_integrate stage 1,
 * lj_forces, md_integrate stage 2) plus md_neighbors when the list is due, all constrained to one
 * device kind (MD has no domain decomposition here, so one run lives on one device). The host only reads
 * back at thermo steps (velocities and per-atom energy/virial) and checks each list build's flags without
 * stalling the queue.
 */
import { TandemError } from '../../core/errors.js';
import type { HardwareKind } from '../../devices/device.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { TaskHandle } from '../../runtime/task.js';
import type { Tensor } from '../../memory/tensor.js';
import { META_CELL_OVERFLOW, META_NONFINITE } from '../../kernels/md_common/fixed.js';
import {
  abortError,
  constraint,
  eligibleQueues,
  requireDevice,
  type DeviceChoice,
  type RunOptions,
} from '../tasks.js';
import { createFcc, createVelocities } from './lattice.js';
import { atomCount, validateMdParams, type MdConfig } from './params.js';
import { unstable, type MdHooks } from './simulate.js';
import { THERMO_COLUMNS, energyDrift, thermoRow, type ThermoRow } from './thermo.js';

/**
 * Submit-and-go: the step's tasks queue behind each other and the host only waits at thermo steps.
 * false waits for each task (a debugging aid: it was needed while the executor's chain forwarding could
 * launch a follower ahead of its predecessor, fixed 2026-12-02; test/workloads/runtime.test.ts checks
 * the pipelined result against the local engine).
 */
const PIPELINE = true;

/**
 * Steps in flight at most (submitted, not yet finished): the host waits for step s - window before it
 * submits step s, and checks the run's signal there. On a GPU, 32 steps keep its queue fed while the host
 * waits; on the CPU a step can take tens of ms, so two steps bound a cancel's drain (and the worker still
 * has the next step queued). Without a bound a 10^9-step run would queue every task before the first ran.
 */
const STEPS_IN_FLIGHT = { cpu: 2, gpu: 32 } as const;

export interface MdResult {
  atoms: number;
  cells: [number, number, number];
  box: [number, number, number];
  steps: number;
  device: HardwareKind;
  precision: 'f32' | 'f64';
  columns: readonly string[];
  thermo: ThermoRow[];
  energyDrift: { relative: number; maxExcursion: number; perStep: number };
  neighborBuilds: number;
  listCapacity: number;
  maxNeighbors: number;
  /** Time of the step loop (setup and the step-0 thermo excluded, as LAMMPS' "Loop time"). */
  seconds: number;
  atomStepsPerSecond: number;
  devices: Record<string, number>;
}

/**
 * 'auto' prefers CUDA (all three MD ops on the GPU), else the CPU. 'webgpu' runs forces and integration
 * in WGSL and builds the neighbour list on the CPU (WGSL has no scratch memory for cell lists), the
 * runtime moving positions and lists between the two.
 */
function chooseDevice(rt: Runtime, cfg: MdConfig): HardwareKind {
  const want: DeviceChoice = cfg.device;
  if (want === 'auto')
    return eligibleQueues(rt, 'lj_forces', 'cuda') > 0 && cellsPerSide(cfg) >= 3 ? 'cuda' : 'cpu';
  requireDevice(rt, 'lj_forces', want);
  if (want === 'webgpu') requireDevice(rt, 'md_neighbors', 'cpu');
  if (want === 'cuda' && cellsPerSide(cfg) < 3) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'md on CUDA needs a box at least 3 list cells (3 x (cutoff + skin)) wide; use more cells',
      {},
    );
  }
  return want;
}

function cellsPerSide(cfg: MdConfig): number {
  const a = Math.pow(4 / cfg.density, 1 / 3);
  return Math.floor((Math.min(...cfg.cells) * a) / (cfg.cutoff + cfg.skin));
}

export async function runMd(
  rt: Runtime,
  params: unknown,
  hooks: MdHooks & RunOptions = {},
): Promise<MdResult> {
  const { signal } = hooks;
  if (signal?.aborted) throw abortError(signal);
  const cfg = validateMdParams(params);
  const device = chooseDevice(rt, cfg);
  // GPUs run MD in f32 (the H200 target is f32; WGSL has no f64); the CPU honours the request.
  const precision = device === 'cpu' ? cfg.precision : 'f32';
  // The CPU's own list is a half list (Newton's third law); GPUs sum full lists, transposed so that
  // neighbouring threads read neighbouring words.
  const half = device === 'cpu';
  const transposed = device !== 'cpu';
  const state = createFcc(cfg);
  createVelocities(state, cfg.temperature, cfg.seed);
  const n = atomCount(cfg);
  const [lx, ly, lz] = state.box;
  const range = cfg.cutoff + cfg.skin;
  // A half list keeps partners j > i, so low-numbered atoms still hold nearly all of theirs: the
  // capacity must fit a full neighbourhood either way.
  const expected = (cfg.density * 4 * Math.PI * range ** 3) / 3;
  const cap = Math.ceil(expected * 1.5) + 16;
  const made: Tensor[] = [];
  const make = (shape: number[], dtype: 'f32' | 'f64' | 'i32', data?: Float64Array): Tensor => {
    const t = rt.tensor(shape, dtype, data);
    made.push(t);
    return t;
  };
  const x = make([n, 3], precision, state.x);
  const v = make([n, 3], precision, state.v);
  const f = make([n, 3], precision);
  const ev = make([n, 2], precision);
  const nbr = make(transposed ? [cap, n] : [n, cap], 'i32');
  const ncount = make([n], 'i32');
  const meta = make([2], 'i32');
  const on = constraint(device);
  const listOn = device === 'webgpu' ? constraint('cpu') : on;
  // Tasks submitted and not yet retired (counted where they ran); `stepEnds[k]` is the index past
  // the last task of the k-th oldest step in flight.
  const handles: TaskHandle[] = [];
  const stepEnds: number[] = [];
  const devices: Record<string, number> = {};
  const retire = (count: number): void => {
    for (const h of handles.splice(0, count)) {
      const id = h.deviceId ?? 'unknown';
      devices[id] = (devices[id] ?? 0) + 1;
    }
    for (let k = 0; k < stepEnds.length; k++) stepEnds[k]! -= count;
  };
  const window = device === 'cpu' ? STEPS_IN_FLIGHT.cpu : STEPS_IN_FLIGHT.gpu;
  /** Before a step: wait until at most window - 1 steps are in flight, then honour a cancel. */
  const admitStep = async (): Promise<void> => {
    while (stepEnds.length >= window) {
      const end = stepEnds.shift()!;
      await handles[end - 1]!.done;
      retire(end);
    }
    if (signal?.aborted) throw abortError(signal);
  };
  const submit = async (
    kernel: string,
    args: Record<string, Tensor>,
    scalars: Record<string, number | boolean>,
    name: string,
    where: { device?: string } = on,
  ): Promise<void> => {
    const h = rt.submit({
      kernel,
      args,
      scalars,
      name,
      ...where,
      ...(hooks.tags ? { tags: hooks.tags } : {}),
    });
    handles.push(h);
    if (!PIPELINE) await h.done;
  };
  const box = { lx, ly, lz };
  let builds = 0;
  let maxNeighbors = 0;
  const neighbors = async (step: number): Promise<{ check: Promise<void> }> => {
    builds++;
    await submit(
      'md_neighbors',
      { x, nbr, ncount, meta },
      { ...box, range, half, transposed },
      `md_neighbors@${step}`,
      listOn,
    );
    const check = rt.read(meta).then((m) => {
      if ((m[1]! & META_NONFINITE) !== 0) throw unstable(step, 'an atom position is not finite');
      if ((m[1]! & META_CELL_OVERFLOW) !== 0 || m[0]! > cap) {
        throw new TandemError(
          'TANDEM_ERR_UNSTABLE',
          `the simulation became unstable at step ${step}: atoms crowded beyond the neighbour list capacity (${m[0]} partners, capacity ${cap})`,
          { step },
        );
      }
      maxNeighbors = Math.max(maxNeighbors, m[0]!);
    });
    // Awaited later; marking it handled keeps an early exit from leaving an unhandled rejection.
    check.catch(() => undefined);
    return { check };
  };
  const forces = (step: number): Promise<void> =>
    submit(
      'lj_forces',
      { x, nbr, ncount, f, ev },
      { ...box, cutoff: cfg.cutoff, shift: cfg.shift, half, transposed },
      `lj_forces@${step}`,
    );
  const thermo: ThermoRow[] = [];
  const sample = async (step: number): Promise<void> => {
    const [vh, eh] = await Promise.all([rt.read(v), rt.read(ev)]);
    let pe = 0;
    let virial = 0;
    for (let i = 0; i < eh.length; i += 2) {
      pe += eh[i]!;
      virial += eh[i + 1]!;
    }
    const row = thermoRow(step, vh, { pe, virial }, state.box);
    if (!Number.isFinite(row.toteng) || !Number.isFinite(row.press))
      throw unstable(step, `total energy is ${row.toteng}`);
    thermo.push(row);
    hooks.onThermo?.(row);
  };
  try {
    await (
      await neighbors(0)
    ).check;
    await forces(0);
    await sample(0);
    const checks: Promise<void>[] = [];
    const t0 = performance.now();
    retire(handles.length);
    for (let step = 1; step <= cfg.steps; step++) {
      await admitStep();
      await submit('md_integrate', { x, v, f }, { dt: cfg.dt, stage: 1 }, `integrate1@${step}`);
      // Fixed-interval rebuilds (LAMMPS `check no`); the displacement check needs positions on the host,
      // which would stall a GPU every step, so only the local engine (simulate.ts) implements it.
      if (step % cfg.neighEvery === 0) checks.push((await neighbors(step)).check);
      await forces(step);
      await submit('md_integrate', { x, v, f }, { dt: cfg.dt, stage: 2 }, `integrate2@${step}`);
      stepEnds.push(handles.length);
      // The step's last task: its completion is the step's (progress; a failure is reported below).
      const onProgress = hooks.onProgress;
      if (onProgress)
        handles.at(-1)!.done.then(
          () => onProgress(step, cfg.steps, 'step'),
          () => undefined,
        );
      if (step % cfg.thermoEvery === 0 || step === cfg.steps) {
        await Promise.all(checks.splice(0));
        await sample(step);
      }
    }
    await Promise.all(checks);
    await Promise.all(handles.map((h) => h.done));
    retire(handles.length);
    const seconds = (performance.now() - t0) / 1000;
    return {
      atoms: n,
      cells: [...cfg.cells],
      box: [lx, ly, lz],
      steps: cfg.steps,
      device,
      precision,
      columns: THERMO_COLUMNS,
      thermo,
      energyDrift: energyDrift(thermo),
      neighborBuilds: builds,
      listCapacity: cap,
      maxNeighbors,
      seconds,
      atomStepsPerSecond: (n * cfg.steps) / seconds,
      devices,
    };
  } finally {
    // A stop or a failure mid-run: the tasks in flight still use the tensors; wait for them first.
    if (handles.length > 0) await Promise.allSettled(handles.map((h) => h.done));
    for (const t of made) rt.free(t);
  }
}
