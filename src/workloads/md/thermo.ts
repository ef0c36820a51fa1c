/**
 * Thermodynamic output as LAMMPS prints it with `thermo_style one` in lj units (thermo_modify norm yes):
 * energies per atom, temperature with 3N-3 degrees of freedom, pressure from the virial
 * P = (N_dof T + sum r.f) / (3 V).
 */
import { degreesOfFreedom, kineticEnergy } from './lattice.js';
import type { PairTotals } from './lj.js';

export interface ThermoRow {
  step: number;
  temp: number;
  /** Pair energy per atom. */
  epair: number;
  /** Molecular (bonded) energy per atom: always 0 for an atomic LJ fluid, kept for LAMMPS' column. */
  emol: number;
  /** (kinetic + potential) per atom. */
  toteng: number;
  press: number;
}

export const THERMO_COLUMNS = ['Step', 'Temp', 'E_pair', 'E_mol', 'TotEng', 'Press'] as const;

export function thermoRow(
  step: number,
  v: ArrayLike<number>,
  totals: PairTotals,
  box: readonly [number, number, number],
): ThermoRow {
  const n = v.length / 3;
  const ke = kineticEnergy(v);
  const dof = degreesOfFreedom(n);
  const temp = (2 * ke) / dof;
  const volume = box[0] * box[1] * box[2];
  return {
    step,
    temp,
    epair: totals.pe / n,
    emol: 0,
    toteng: (ke + totals.pe) / n,
    press: (dof * temp + totals.virial) / (3 * volume),
  };
}

/** A LAMMPS-style table: header line and one line per row, for logs and the CLI. */
export function formatThermo(rows: readonly ThermoRow[]): string {
  const fmt = (x: number): string => x.toPrecision(8).padStart(14);
  const lines = [THERMO_COLUMNS.map((c) => c.padStart(c === 'Step' ? 10 : 14)).join('')];
  for (const r of rows) {
    lines.push(String(r.step).padStart(10) + [r.temp, r.epair, r.emol, r.toteng, r.press].map(fmt).join(''));
  }
  return lines.join('\n');
}

/** Relative total-energy drift between the first and last row and the largest excursion in between. */
export function energyDrift(rows: readonly ThermoRow[]): {
  relative: number;
  maxExcursion: number;
  perStep: number;
} {
  if (rows.length < 2) return { relative: 0, maxExcursion: 0, perStep: 0 };
  const e0 = rows[0]!.toteng;
  const last = rows[rows.length - 1]!;
  let maxExc = 0;
  for (const r of rows) maxExc = Math.max(maxExc, Math.abs(r.toteng - e0) / Math.abs(e0));
  const relative = (last.toteng - e0) / Math.abs(e0);
  return { relative, maxExcursion: maxExc, perStep: relative / Math.max(1, last.step - rows[0]!.step) };
}
