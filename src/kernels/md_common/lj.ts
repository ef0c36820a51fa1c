/**
 * Lennard-Jones 12-6 in reduced units (epsilon = sigma = 1) with a cutoff, as LAMMPS pair lj/cut:
 * E(r) = 4 (r^-12 - r^-6) - shift for r < rc, shift = E(rc) only with `pair_modify shift yes`.
 * The force loop runs over a half neighbour list (Newton's third law), accumulating the energy and
 * the virial sum r_ij . f_ij that the pressure needs.
 */
import type { NeighborList } from './neighbor.js';

export interface PairTotals {
  /** Total potential energy. */
  pe: number;
  /** Sum over pairs of r_ij . f_ij. */
  virial: number;
}

export function ljShift(cutoff: number, shift: boolean): number {
  if (!shift) return 0;
  const r6i = 1 / cutoff ** 6;
  return 4 * r6i * (r6i - 1);
}

/**
 * Forces into `f` (overwritten). `atomEnergy`, when given, receives each atom's share (half of each
 * pair energy), which is what LAMMPS' `compute pe/atom` reports.
 */
export function ljForces(
  x: Float64Array,
  f: Float64Array,
  box: readonly [number, number, number],
  list: NeighborList,
  cutoff: number,
  shift: boolean,
  atomEnergy?: Float64Array,
): PairTotals {
  if (!list.half) throw new Error('ljForces needs a half neighbour list');
  const n = x.length / 3;
  const rc2 = cutoff * cutoff;
  const eshift = ljShift(cutoff, shift);
  const [Lx, Ly, Lz] = box;
  const hx = Lx / 2;
  const hy = Ly / 2;
  const hz = Lz / 2;
  const { offsets, neighbors } = list;
  f.fill(0);
  atomEnergy?.fill(0);
  let pe = 0;
  let virial = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[3 * i]!;
    const yi = x[3 * i + 1]!;
    const zi = x[3 * i + 2]!;
    let fxi = 0;
    let fyi = 0;
    let fzi = 0;
    let ei = 0;
    const end = offsets[i + 1]!;
    for (let q = offsets[i]!; q < end; q++) {
      const j = neighbors[q]!;
      let dx = xi - x[3 * j]!;
      let dy = yi - x[3 * j + 1]!;
      let dz = zi - x[3 * j + 2]!;
      if (dx > hx) dx -= Lx;
      else if (dx < -hx) dx += Lx;
      if (dy > hy) dy -= Ly;
      else if (dy < -hy) dy += Ly;
      if (dz > hz) dz -= Lz;
      else if (dz < -hz) dz += Lz;
      const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 >= rc2) continue;
      const r2i = 1 / r2;
      const r6i = r2i * r2i * r2i;
      const fpair = r6i * (48 * r6i - 24) * r2i;
      fxi += dx * fpair;
      fyi += dy * fpair;
      fzi += dz * fpair;
      f[3 * j] -= dx * fpair;
      f[3 * j + 1] -= dy * fpair;
      f[3 * j + 2] -= dz * fpair;
      const e = 4 * r6i * (r6i - 1) - eshift;
      ei += e;
      virial += r2 * fpair;
      if (atomEnergy) atomEnergy[j] += 0.5 * e;
    }
    f[3 * i] += fxi;
    f[3 * i + 1] += fyi;
    f[3 * i + 2] += fzi;
    pe += ei;
    if (atomEnergy) atomEnergy[i] += 0.5 * ei;
  }
  return { pe, virial };
}

/** Reference energy over all pairs (O(N^2), minimum image): for tests and finite differences only. */
export function ljEnergyAllPairs(
  x: Float64Array,
  box: readonly [number, number, number],
  cutoff: number,
  shift: boolean,
): number {
  const n = x.length / 3;
  const rc2 = cutoff * cutoff;
  const eshift = ljShift(cutoff, shift);
  let pe = 0;
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) {
      let r2 = 0;
      for (let d = 0; d < 3; d++) {
        const L = box[d]!;
        let dd = x[3 * i + d]! - x[3 * j + d]!;
        dd -= L * Math.round(dd / L);
        r2 += dd * dd;
      }
      if (r2 < rc2) {
        const r6i = 1 / (r2 * r2 * r2);
        pe += 4 * r6i * (r6i - 1) - eshift;
      }
    }
  return pe;
}
