/**
 * Cell lists and Verlet neighbour lists. Atoms are binned into cells at least (cutoff + skin) wide, so
 * every partner within range sits in the 27 surrounding cells; the pairs within cutoff + skin are kept
 * in a compressed (CSR) list that stays valid until some atom has moved more than skin/2.
 */

export interface NeighborList {
  /** Half list (each pair once, j > i) or full list (each pair from both sides). */
  readonly half: boolean;
  /** offsets[i]..offsets[i+1] index `neighbors` for atom i. */
  readonly offsets: Int32Array;
  readonly neighbors: Int32Array;
  readonly pairs: number;
  /** Positions at build time, to measure how far atoms moved since. */
  readonly x0: Float64Array;
}

export interface CellGrid {
  readonly dims: readonly [number, number, number];
  /** Atoms sorted by cell: cellStart[c]..cellStart[c+1] index `atoms`. */
  readonly cellStart: Int32Array;
  readonly atoms: Int32Array;
  /** For each cell, its distinct neighbour cells (itself included), `stencilSize` entries each. */
  readonly stencil: Int32Array;
  readonly stencilSize: Int32Array;
  /**
   * With at least 3 cells per axis: for each cell, itself then its 13 "forward" neighbours (14 entries).
   * A half list built over it visits each pair once (own cell: j > i; forward cells: all), half the
   * distance checks of the full stencil. null when an axis has fewer than 3 cells.
   */
  readonly halfStencil: Int32Array | null;
}

/** Folds coordinates into [0, L): the list and the minimum-image test both assume wrapped positions. */
export function wrapPositions(x: Float64Array, box: readonly [number, number, number]): void {
  for (let i = 0; i < x.length; i += 3) {
    for (let d = 0; d < 3; d++) {
      const L = box[d]!;
      let c = x[i + d]!;
      if (c < 0 || c >= L) {
        c -= Math.floor(c / L) * L;
        if (c >= L) c -= L; // floor rounding can leave c == L
        x[i + d] = c;
      }
    }
  }
}

export function buildCells(
  x: Float64Array | Float32Array,
  box: readonly [number, number, number],
  range: number,
): CellGrid {
  const n = x.length / 3;
  const dims = box.map((L) => Math.max(1, Math.floor(L / range))) as [number, number, number];
  const [cx, cy, cz] = dims;
  const ncell = cx * cy * cz;
  const cellOf = new Int32Array(n);
  const counts = new Int32Array(ncell + 1);
  for (let i = 0; i < n; i++) {
    const ix = Math.min(cx - 1, Math.floor((x[3 * i]! / box[0]) * cx));
    const iy = Math.min(cy - 1, Math.floor((x[3 * i + 1]! / box[1]) * cy));
    const iz = Math.min(cz - 1, Math.floor((x[3 * i + 2]! / box[2]) * cz));
    const c = (iz * cy + iy) * cx + ix;
    cellOf[i] = c;
    counts[c + 1]!++;
  }
  for (let c = 0; c < ncell; c++) counts[c + 1]! += counts[c]!;
  const cellStart = counts;
  const fill = cellStart.slice(0, ncell);
  const atoms = new Int32Array(n);
  for (let i = 0; i < n; i++) atoms[fill[cellOf[i]!]!++] = i;
  // With fewer than 3 cells along an axis the -1 and +1 neighbours are the same cell: dedupe so that
  // no pair is visited twice.
  const stencil = new Int32Array(ncell * 27);
  const stencilSize = new Int32Array(ncell);
  for (let z = 0; z < cz; z++)
    for (let y = 0; y < cy; y++)
      for (let xx = 0; xx < cx; xx++) {
        const c = (z * cy + y) * cx + xx;
        let k = 0;
        for (let dz = -1; dz <= 1; dz++)
          for (let dy = -1; dy <= 1; dy++)
            for (let dx = -1; dx <= 1; dx++) {
              const nc =
                ((((z + dz + cz) % cz) * cy + ((y + dy + cy) % cy)) * cx + ((xx + dx + cx) % cx)) | 0;
              let seen = false;
              for (let q = 0; q < k; q++) if (stencil[c * 27 + q] === nc) seen = true;
              if (!seen) stencil[c * 27 + k++] = nc;
            }
        stencilSize[c] = k;
      }
  let halfStencil: Int32Array | null = null;
  if (cx >= 3 && cy >= 3 && cz >= 3) {
    halfStencil = new Int32Array(ncell * 14);
    for (let z = 0; z < cz; z++)
      for (let y = 0; y < cy; y++)
        for (let xx = 0; xx < cx; xx++) {
          const c = (z * cy + y) * cx + xx;
          let k = 0;
          halfStencil[c * 14 + k++] = c;
          for (let dz = 0; dz <= 1; dz++)
            for (let dy = dz === 0 ? 0 : -1; dy <= 1; dy++)
              for (let dx = dz === 0 && dy === 0 ? 1 : -1; dx <= 1; dx++) {
                halfStencil[c * 14 + k++] =
                  (((z + dz + cz) % cz) * cy + ((y + dy + cy) % cy)) * cx + ((xx + dx + cx) % cx);
              }
        }
  }
  return { dims, cellStart, atoms, stencil, stencilSize, halfStencil };
}

/**
 * Builds the Verlet list of pairs closer than `range` (cutoff + skin) under the minimum-image
 * convention. Positions must be wrapped into the box first.
 */
export function buildNeighborList(
  x: Float64Array,
  box: readonly [number, number, number],
  range: number,
  half: boolean,
): NeighborList {
  const n = x.length / 3;
  const grid = buildCells(x, box, range);
  const { cellStart, atoms, stencil, stencilSize } = grid;
  const [cx, cy, cz] = grid.dims;
  const range2 = range * range;
  const [Lx, Ly, Lz] = box;
  const hx = Lx / 2;
  const hy = Ly / 2;
  const hz = Lz / 2;
  const density = n / (Lx * Ly * Lz);
  // Expected partners within range, with margin; the list grows if a dense region overflows it.
  const perAtom = Math.ceil(((4 / 3) * Math.PI * range ** 3 * density * 1.3) / (half ? 2 : 1)) + 8;
  let neighbors = new Int32Array(Math.max(16, n * perAtom));
  const offsets = new Int32Array(n + 1);
  let p = 0;
  for (let i = 0; i < n; i++) {
    offsets[i] = p;
    const xi = x[3 * i]!;
    const yi = x[3 * i + 1]!;
    const zi = x[3 * i + 2]!;
    const ix = Math.min(cx - 1, Math.floor((xi / Lx) * cx));
    const iy = Math.min(cy - 1, Math.floor((yi / Ly) * cy));
    const iz = Math.min(cz - 1, Math.floor((zi / Lz) * cz));
    const c = (iz * cy + iy) * cx + ix;
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
        if (dx > hx) dx -= Lx;
        else if (dx < -hx) dx += Lx;
        if (dy > hy) dy -= Ly;
        else if (dy < -hy) dy += Ly;
        if (dz > hz) dz -= Lz;
        else if (dz < -hz) dz += Lz;
        if (dx * dx + dy * dy + dz * dz < range2) {
          if (p === neighbors.length) {
            const grown = new Int32Array(neighbors.length * 2);
            grown.set(neighbors);
            neighbors = grown;
          }
          neighbors[p++] = j;
        }
      }
    }
  }
  offsets[n] = p;
  return { half, offsets, neighbors, pairs: p, x0: x.slice() };
}

/** Largest displacement since the list was built (minimum image), for the skin/2 rebuild check. */
export function maxDisplacement(
  list: NeighborList,
  x: Float64Array,
  box: readonly [number, number, number],
): number {
  let max2 = 0;
  const x0 = list.x0;
  const [Lx, Ly, Lz] = box;
  for (let i = 0; i < x.length; i += 3) {
    // Positions are wrapped only at rebuilds, so a difference is either small or off by one box length.
    let dx = Math.abs(x[i]! - x0[i]!);
    let dy = Math.abs(x[i + 1]! - x0[i + 1]!);
    let dz = Math.abs(x[i + 2]! - x0[i + 2]!);
    if (dx > Lx / 2) dx = Lx - dx;
    if (dy > Ly / 2) dy = Ly - dy;
    if (dz > Lz / 2) dz = Lz - dz;
    const r2 = dx * dx + dy * dy + dz * dz;
    if (r2 > max2) max2 = r2;
  }
  return Math.sqrt(max2);
}
