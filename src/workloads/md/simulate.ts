/**
 * The MD loop in plain TypeScript on the calling thread (f64): the reference that the runtime kernels
 * are checked against, and the engine for small systems. Mirrors LAMMPS' Verlet::run for fix nve:
 * half kick, drift, re-neighbour when due, forces, half kick, thermo.
 */
import { TandemError } from '../../core/errors.js';
import { createFcc, createVelocities, type MdState } from './lattice.js';
import { ljForces, type PairTotals } from './lj.js';
import { buildNeighborList, maxDisplacement, wrapPositions, type NeighborList } from './neighbor.js';
import type { MdConfig } from './params.js';
import { thermoRow, type ThermoRow } from './thermo.js';

export interface MdRunStats {
  neighborBuilds: number;
  /**
   * LAMMPS' "dangerous builds": with the displacement check on, rebuilds triggered at the first step
   * a rebuild was allowed (atoms may have crossed skin/2 earlier, so pairs may have been missed).
   * null when the check is off (LAMMPS: "not checked").
   */
  dangerousBuilds: number | null;
}

export interface MdHooks {
  /** Called with each thermo row as it is produced (progress for jobs). */
  onThermo?(row: ThermoRow): void;
}

export function initialState(config: MdConfig): MdState {
  const state = createFcc(config);
  createVelocities(state, config.temperature, config.seed);
  return state;
}

export function unstable(step: number, what: string): TandemError {
  return new TandemError('TANDEM_ERR_UNSTABLE', `the simulation became unstable at step ${step}: ${what}`, {
    step,
  });
}

/** Decides re-neighbouring as LAMMPS `neigh_modify delay 0 every N check yes|no` does. */
export function rebuildDue(config: MdConfig, sinceBuild: number, moved: () => number): boolean {
  if (sinceBuild % config.neighEvery !== 0) return false;
  return !config.neighCheck || moved() > config.skin / 2;
}

export function runLocal(
  config: MdConfig,
  hooks: MdHooks = {},
  state: MdState = initialState(config),
): {
  state: MdState;
  thermo: ThermoRow[];
  stats: MdRunStats;
} {
  const { x, v, f, box } = state;
  const range = config.cutoff + config.skin;
  const dtf = 0.5 * config.dt;
  const dt = config.dt;
  const stats: MdRunStats = { neighborBuilds: 0, dangerousBuilds: config.neighCheck ? 0 : null };
  wrapPositions(x, box);
  let list: NeighborList = buildNeighborList(x, box, range, true);
  stats.neighborBuilds++;
  let totals: PairTotals = ljForces(x, f, box, list, config.cutoff, config.shift);
  const thermo: ThermoRow[] = [];
  const emit = (row: ThermoRow): void => {
    thermo.push(row);
    hooks.onThermo?.(row);
  };
  emit(thermoRow(0, v, totals, box));
  let sinceBuild = 0;
  for (let step = 1; step <= config.steps; step++) {
    for (let i = 0; i < x.length; i++) {
      v[i] += dtf * f[i]!;
      x[i] += dt * v[i]!;
    }
    sinceBuild++;
    const current = list;
    if (rebuildDue(config, sinceBuild, () => maxDisplacement(current, x, box))) {
      if (stats.dangerousBuilds !== null && sinceBuild === config.neighEvery) stats.dangerousBuilds++;
      wrapPositions(x, box);
      list = buildNeighborList(x, box, range, true);
      stats.neighborBuilds++;
      sinceBuild = 0;
    }
    totals = ljForces(x, f, box, list, config.cutoff, config.shift);
    if (!Number.isFinite(totals.pe)) throw unstable(step, `potential energy is ${totals.pe}`);
    for (let i = 0; i < v.length; i++) v[i] += dtf * f[i]!;
    if (step % config.thermoEvery === 0 || step === config.steps) emit(thermoRow(step, v, totals, box));
  }
  const lastRow = thermo[thermo.length - 1]!;
  if (!Number.isFinite(lastRow.toteng)) throw unstable(lastRow.step, `total energy is ${lastRow.toteng}`);
  return { state, thermo, stats };
}
