/**
 * Tile matrices for the tiled workloads: a square matrix split into nt x nt tensors of tile x tile
 * (row-major inside each tile), filled from a generator so huge matrices never exist whole on the host.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';

export type TileDType = 'f32' | 'f64';

export interface TileMatrix {
  readonly n: number;
  readonly tile: number;
  readonly nt: number;
  readonly dtype: TileDType;
  /** tiles[m][n]; for a lower (symmetric) matrix only m >= n exist. */
  readonly tiles: Tensor[][];
}

export function checkTiling(n: number, tile: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(tile) || n <= 0 || tile <= 0 || n % tile !== 0) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `matrix size ${n} must be a positive multiple of the tile size ${tile}`,
      {
        n,
        tile,
      },
    );
  }
  return n / tile;
}

/** Builds tiles from `value(i, j)` (global indices); `lower` keeps only the tiles on or below the diagonal. */
export function tileMatrix(
  rt: Runtime,
  n: number,
  tile: number,
  dtype: TileDType,
  value: (i: number, j: number) => number,
  lower: boolean,
): TileMatrix {
  const nt = checkTiling(n, tile);
  const tiles: Tensor[][] = [];
  for (let m = 0; m < nt; m++) {
    const row: Tensor[] = [];
    for (let c = 0; c < (lower ? m + 1 : nt); c++) {
      const data = dtype === 'f64' ? new Float64Array(tile * tile) : new Float32Array(tile * tile);
      for (let i = 0; i < tile; i++)
        for (let j = 0; j < tile; j++) data[i * tile + j] = value(m * tile + i, c * tile + j);
      row.push(rt.tensor([tile, tile], dtype, data));
    }
    tiles.push(row);
  }
  return { n, tile, nt, dtype, tiles };
}

/** A symmetric positive definite test matrix: symmetric values in [0, 1) plus n on the diagonal. */
export function spdValue(n: number, seed = 1): (i: number, j: number) => number {
  return (i, j) => {
    const a = Math.min(i, j);
    const b = Math.max(i, j);
    let h = (a * 73856093) ^ (b * 19349663) ^ (seed * 83492791);
    h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
    h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
    h ^= h >>> 16;
    return (h >>> 0) / 2 ** 32 + (i === j ? n : 0);
  };
}

/** Reads the matrix back into one row-major array (upper part of a lower matrix left zero). */
export async function readTiles(rt: Runtime, m: TileMatrix, lower: boolean): Promise<Float64Array> {
  const out = new Float64Array(m.n * m.n);
  for (let r = 0; r < m.nt; r++) {
    for (let c = 0; c < m.tiles[r]!.length; c++) {
      const data = await rt.read(m.tiles[r]![c]!);
      for (let i = 0; i < m.tile; i++)
        for (let j = 0; j < m.tile; j++) {
          if (lower && r === c && j > i) continue; // above the diagonal of a diagonal tile: not part of L
          out[(r * m.tile + i) * m.n + c * m.tile + j] = Number(data[i * m.tile + j]);
        }
    }
  }
  return out;
}
