/**
 * Tiled Cholesky (A = L·Lᵀ, lower) and tiled GEMM on the runtime: the graphs of graph.ts submitted as
 * potrf/trsm/syrk/gemm tile tasks with their critical-path priorities, so any policy can run them and
 * priority-aware ones (prio, dmdas) run the panel first.
 */
import type { TaskHandle } from '../../runtime/task.js';
import type { Runtime } from '../../runtime/runtime.js';
import { choleskyGraph, gemmGraph, type TileGraph } from './graph.js';
import type { TileMatrix } from './tiles.js';
import { TandemError } from '../../core/errors.js';

export interface TiledRunOptions {
  /** Device constraint for every task ('cpu', 'cuda', ...). */
  readonly device?: string;
  /** Use the critical-path priorities (default true). */
  readonly priorities?: boolean;
  readonly tags?: Readonly<Record<string, string>>;
}

export interface TiledRun {
  readonly graph: TileGraph;
  readonly tasks: TaskHandle[];
  /** Resolves when every task finished; rejects with the first failure (created on demand, so an
   * unobserved failure is never an unhandled rejection). */
  wait(): Promise<void>;
  /** Flops of the factorization (n³/3) or the product (2n³). */
  readonly flops: number;
}

function settle(tasks: TaskHandle[]): Promise<void> {
  return Promise.all(tasks.map((t) => t.done)).then(() => undefined);
}

/** Factorizes the lower tile matrix `a` in place: its tiles end up holding L. */
export function submitCholesky(rt: Runtime, a: TileMatrix, opts: TiledRunOptions = {}): TiledRun {
  const g = choleskyGraph(a.nt);
  const tile = (id: number) => a.tiles[Math.floor(id / a.nt)]![id % a.nt]!;
  const common = {
    ...(opts.device ? { device: opts.device } : {}),
    ...(opts.tags ? { tags: opts.tags } : {}),
  };
  const tasks = g.tasks.map((t) => {
    const priority = opts.priorities === false ? 0 : t.priority;
    const w = tile(t.writes[0]!);
    switch (t.op) {
      case 'potrf':
        return rt.submit({ kernel: 'potrf', args: { a: w }, priority, name: t.name, ...common });
      case 'trsm':
        return rt.submit({
          kernel: 'trsm',
          args: { a: tile(t.reads[0]!), b: w },
          priority,
          name: t.name,
          ...common,
        });
      case 'syrk':
        return rt.submit({
          kernel: 'syrk',
          args: { a: tile(t.reads[0]!), c: w },
          scalars: { alpha: -1, beta: 1 },
          priority,
          name: t.name,
          ...common,
        });
      case 'gemm':
        return rt.submit({
          kernel: 'gemm',
          args: { a: tile(t.reads[0]!), b: tile(t.reads[1]!), c: w },
          scalars: { alpha: -1, beta: 1, transA: false, transB: true },
          priority,
          name: t.name,
          ...common,
        });
    }
  });
  return { graph: g, tasks, wait: () => settle(tasks), flops: a.n ** 3 / 3 };
}

/** C += A·B over full (not lower) tile matrices of the same tiling. */
export function submitTiledGemm(
  rt: Runtime,
  a: TileMatrix,
  b: TileMatrix,
  c: TileMatrix,
  opts: TiledRunOptions = {},
): TiledRun {
  if (a.nt !== b.nt || a.nt !== c.nt || a.tile !== b.tile || a.tile !== c.tile)
    throw new TandemError('TANDEM_ERR_SHAPE', 'tiled gemm: a, b and c must have the same tiling');
  const nt = a.nt;
  const g = gemmGraph(nt);
  const at = (id: number) => {
    const m = [a, b, c][Math.floor(id / (nt * nt))]!;
    const r = id % (nt * nt);
    return m.tiles[Math.floor(r / nt)]![r % nt]!;
  };
  const tasks = g.tasks.map((t) =>
    rt.submit({
      kernel: 'gemm',
      args: { a: at(t.reads[0]!), b: at(t.reads[1]!), c: at(t.writes[0]!) },
      scalars: { alpha: 1, beta: 1, transA: false, transB: false },
      priority: opts.priorities === false ? 0 : t.priority,
      name: t.name,
      ...(opts.device ? { device: opts.device } : {}),
      ...(opts.tags ? { tags: opts.tags } : {}),
    }),
  );
  return { graph: g, tasks, wait: () => settle(tasks), flops: 2 * a.n ** 3 };
}
