/**
 * The MD kernels' CPU bodies on fixed-capacity neighbour lists (the layout every backend shares, so a
 * list built on one device is valid on another): `nbr` holds up to `cap` partners per atom, row-major
 * [n, cap] or transposed [cap, n] (coalesced on GPUs), `ncount[i]` how many are valid. `meta` [2]:
 * meta[0] = largest partner count seen (> cap means the list overflowed), meta[1] = flags
 * (1: non-finite position, 2: a cell overflowed).
 */
import { buildCells } from './neighbor.js';
import { ljShift } from './lj.js';

export type Real = Float32Array | Float64Array;

export interface Box3 {
  lx: number;
  ly: number;
  lz: number;
}

export const META_NONFINITE = 1;
export const META_CELL_OVERFLOW = 2;

export function buildFixedList(
  x: Real,
  box: Box3,
  range: number,
  half: boolean,
  transposed: boolean,
  nbr: Int32Array,
  ncount: Int32Array,
  meta: Int32Array,
): void {
  const n = x.length / 3;
  const cap = nbr.length / n;
  const { lx, ly, lz } = box;
  meta[0] = 0;
  meta[1] = 0;
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i]!)) {
      meta[1] = META_NONFINITE;
      ncount.fill(0);
      return;
    }
  }
  // Wrap into the box (the list and the cell binning assume it).
  for (let i = 0; i < x.length; i += 3) {
    for (let d = 0; d < 3; d++) {
      const L = d === 0 ? lx : d === 1 ? ly : lz;
      let c = x[i + d]!;
      if (c < 0 || c >= L) {
        c -= Math.floor(c / L) * L;
        if (c >= L) c -= L;
        x[i + d] = c;
      }
    }
  }
  const grid = buildCells(x, [lx, ly, lz], range);
  const { cellStart, atoms, stencil, stencilSize } = grid;
  const [cx, cy, cz] = grid.dims;
  const range2 = range * range;
  const hx = lx / 2;
  const hy = ly / 2;
  const hz = lz / 2;
  let maxCount = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[3 * i]!;
    const yi = x[3 * i + 1]!;
    const zi = x[3 * i + 2]!;
    const c =
      (Math.min(cz - 1, Math.floor((zi / lz) * cz)) * cy + Math.min(cy - 1, Math.floor((yi / ly) * cy))) *
        cx +
      Math.min(cx - 1, Math.floor((xi / lx) * cx));
    let cnt = 0;
    const hs = half ? grid.halfStencil : null;
    const ns = hs ? 14 : stencilSize[c]!;
    for (let s = 0; s < ns; s++) {
      const nc = hs ? hs[c * 14 + s]! : stencil[c * 27 + s]!;
      // Half stencil: pairs inside the own cell once (j > i), forward cells entirely.
      const own = s === 0 && hs !== null;
      for (let q = cellStart[nc]!; q < cellStart[nc + 1]!; q++) {
        const j = atoms[q]!;
        if (hs ? own && j <= i : half ? j <= i : j === i) continue;
        let dx = xi - x[3 * j]!;
        let dy = yi - x[3 * j + 1]!;
        let dz = zi - x[3 * j + 2]!;
        if (dx > hx) dx -= lx;
        else if (dx < -hx) dx += lx;
        if (dy > hy) dy -= ly;
        else if (dy < -hy) dy += ly;
        if (dz > hz) dz -= lz;
        else if (dz < -hz) dz += lz;
        if (dx * dx + dy * dy + dz * dz < range2) {
          if (cnt < cap) nbr[transposed ? cnt * n + i : i * cap + cnt] = j;
          cnt++;
        }
      }
    }
    ncount[i] = Math.min(cnt, cap);
    if (cnt > maxCount) maxCount = cnt;
  }
  meta[0] = maxCount;
}

/**
 * LJ forces over a fixed list. Half list: Newton's third law, each pair once. Full list: each atom sums
 * its own partners (no writes to j: what GPUs do). `ev` [n, 2] receives each atom's share of the pair
 * energy and of the virial sum r.f.
 */
export function ljForcesFixed(
  x: Real,
  f: Real,
  ev: Real,
  box: Box3,
  nbr: Int32Array,
  ncount: Int32Array,
  cutoff: number,
  shift: boolean,
  half: boolean,
  transposed: boolean,
): void {
  const n = x.length / 3;
  const cap = nbr.length / n;
  const rc2 = cutoff * cutoff;
  const eshift = ljShift(cutoff, shift);
  const { lx, ly, lz } = box;
  const hx = lx / 2;
  const hy = ly / 2;
  const hz = lz / 2;
  f.fill(0);
  ev.fill(0);
  for (let i = 0; i < n; i++) {
    const xi = x[3 * i]!;
    const yi = x[3 * i + 1]!;
    const zi = x[3 * i + 2]!;
    let fxi = 0;
    let fyi = 0;
    let fzi = 0;
    let ei = 0;
    let vi = 0;
    const m = ncount[i]!;
    for (let k = 0; k < m; k++) {
      const j = nbr[transposed ? k * n + i : i * cap + k]!;
      let dx = xi - x[3 * j]!;
      let dy = yi - x[3 * j + 1]!;
      let dz = zi - x[3 * j + 2]!;
      // Positions are wrapped at rebuilds and drift less than the skin between them, so |d| < 1.5 L:
      // one conditional shift finds the nearest image.
      if (dx > hx) dx -= lx;
      else if (dx < -hx) dx += lx;
      if (dy > hy) dy -= ly;
      else if (dy < -hy) dy += ly;
      if (dz > hz) dz -= lz;
      else if (dz < -hz) dz += lz;
      const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 >= rc2) continue;
      const r2i = 1 / r2;
      const r6i = r2i * r2i * r2i;
      const fpair = r6i * (48 * r6i - 24) * r2i;
      fxi += dx * fpair;
      fyi += dy * fpair;
      fzi += dz * fpair;
      const e = 4 * r6i * (r6i - 1) - eshift;
      if (half) {
        f[3 * j] -= dx * fpair;
        f[3 * j + 1] -= dy * fpair;
        f[3 * j + 2] -= dz * fpair;
        ev[2 * j] += 0.5 * e;
        ev[2 * j + 1] += 0.5 * r2 * fpair;
      }
      ei += e;
      vi += r2 * fpair;
    }
    f[3 * i] += fxi;
    f[3 * i + 1] += fyi;
    f[3 * i + 2] += fzi;
    ev[2 * i] += 0.5 * ei;
    ev[2 * i + 1] += 0.5 * vi;
  }
}

/** Velocity Verlet with unit masses. Stage 1: half kick and drift; stage 2: the second half kick. */
export function integrate(x: Real, v: Real, f: Real, dt: number, stage: 1 | 2): void {
  const h = 0.5 * dt;
  if (stage === 1) {
    for (let i = 0; i < x.length; i++) {
      v[i] += h * f[i]!;
      x[i] += dt * v[i]!;
    }
  } else {
    for (let i = 0; i < v.length; i++) v[i] += h * f[i]!;
  }
}
