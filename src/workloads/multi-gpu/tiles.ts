/**
 * Tile grids created directly in GPU memory (no host copy of a huge matrix), spread block-cyclically
 * over the given devices, and a tiled GEMM over such grids in any float dtype (the tiled workload's
 * TileMatrix is f32/f64). The scheduler decides where each tile task runs; the initial placement only
 * says where the data starts.
 */
import type { DType } from '../../core/dtype.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { TaskHandle } from '../../runtime/task.js';
import { checkTiling, gemmGraph } from '../tiled/index.js';

export interface DeviceTiles {
  readonly n: number;
  readonly tile: number;
  readonly nt: number;
  readonly dtype: DType;
  /** tiles[m][c]; for a lower grid only c <= m exist. */
  readonly tiles: Tensor[][];
}

/** Device of tile (m, c) in a block-cyclic spread: consecutive tiles of a row and a column alternate. */
export function tileDevice(devices: readonly string[], m: number, c: number): string {
  return devices[(m + c) % devices.length]!;
}

/**
 * An n x n grid of tile x tile tensors, each filled on its device by `value(m, c)`: a constant
 * ('fill' task), or null to leave the tile to the caller (written later, e.g. from the host).
 */
export async function fillTiles(
  rt: Runtime,
  n: number,
  tile: number,
  dtype: DType,
  devices: readonly string[],
  value: (m: number, c: number) => number | null,
  lower = false,
): Promise<DeviceTiles> {
  const nt = checkTiling(n, tile);
  const tiles: Tensor[][] = [];
  const fills: Promise<unknown>[] = [];
  for (let m = 0; m < nt; m++) {
    const row: Tensor[] = [];
    for (let c = 0; c < (lower ? m + 1 : nt); c++) {
      const t = rt.tensor([tile, tile], dtype);
      const v = value(m, c);
      if (v !== null)
        fills.push(
          rt.submit({
            kernel: 'fill',
            args: { y: t },
            scalars: { value: v },
            device: tileDevice(devices, m, c),
          }).done,
        );
      row.push(t);
    }
    tiles.push(row);
  }
  await Promise.all(fills);
  return { n, tile, nt, dtype, tiles };
}

export function freeTiles(rt: Runtime, g: DeviceTiles): void {
  for (const row of g.tiles) for (const t of row) rt.free(t);
}

/** C += A·B over square tile grids of the same tiling, with the tiled workload's priorities. */
export function submitGemmTiles(
  rt: Runtime,
  a: DeviceTiles,
  b: DeviceTiles,
  c: DeviceTiles,
  opts: { device?: string } = {},
): { tasks: TaskHandle[]; flops: number; wait(): Promise<void> } {
  const nt = a.nt;
  const g = gemmGraph(nt);
  const at = (id: number): Tensor => {
    const grid = [a, b, c][Math.floor(id / (nt * nt))]!;
    const r = id % (nt * nt);
    return grid.tiles[Math.floor(r / nt)]![r % nt]!;
  };
  const tasks = g.tasks.map((t) =>
    rt.submit({
      kernel: 'gemm',
      args: { a: at(t.reads[0]!), b: at(t.reads[1]!), c: at(t.writes[0]!) },
      scalars: { alpha: 1, beta: 1, transA: false, transB: false },
      priority: t.priority,
      name: t.name,
      ...(opts.device ? { device: opts.device } : {}),
    }),
  );
  return {
    tasks,
    flops: 2 * a.n ** 3,
    wait: () => Promise.all(tasks.map((t) => t.done)).then(() => undefined),
  };
}
