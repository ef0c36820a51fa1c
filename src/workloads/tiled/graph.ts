/**
 * Tiled algorithms as abstract task graphs: which tile op touches which tiles, in program order.
 * Dependencies follow from data access order (read-after-write, write-after-read, write-after-write)
 * exactly as the runtime infers them, and every task gets a critical-path priority (its bottom level:
 * the longest chain of work from it to the end, weighted by flops), so priority-aware policies run the
 * panel first. The same graph feeds the real runtime (cholesky.ts, gemm.ts) and the simulator.
 */

export type TileOp = 'potrf' | 'trsm' | 'syrk' | 'gemm';

export interface TileTask {
  readonly id: number;
  readonly op: TileOp;
  readonly name: string;
  /** Tiles read only. */
  readonly reads: readonly number[];
  /** Tiles read and written (every tile op here updates in place). */
  readonly writes: readonly number[];
  readonly deps: number[];
  priority: number;
}

export interface TileGraph {
  readonly tasks: TileTask[];
  /** Number of tiles (ids 0..tiles-1). */
  readonly tiles: number;
  /** Tiles per matrix dimension. */
  readonly nt: number;
}

/** Relative weight of each op per tile (flops / n³): used for critical-path priorities. */
export const OP_WEIGHT: Readonly<Record<TileOp, number>> = { potrf: 1 / 3, trsm: 1, syrk: 1, gemm: 2 };

class Builder {
  readonly tasks: TileTask[] = [];
  private readonly lastWriter: number[];
  private readonly readers: number[][];

  constructor(tiles: number) {
    this.lastWriter = new Array<number>(tiles).fill(-1);
    this.readers = Array.from({ length: tiles }, () => []);
  }

  add(op: TileOp, name: string, reads: number[], writes: number[]): void {
    const id = this.tasks.length;
    const deps = new Set<number>();
    for (const t of reads) {
      if (this.lastWriter[t]! >= 0) deps.add(this.lastWriter[t]!);
      this.readers[t]!.push(id);
    }
    for (const t of writes) {
      if (this.lastWriter[t]! >= 0) deps.add(this.lastWriter[t]!);
      for (const r of this.readers[t]!) if (r !== id) deps.add(r);
      this.lastWriter[t] = id;
      this.readers[t] = [];
    }
    this.tasks.push({ id, op, name, reads, writes, deps: [...deps], priority: 0 });
  }
}

/** Bottom levels: weight of the task plus the heaviest path below it. */
export function setCriticalPathPriorities(
  tasks: TileTask[],
  weight: (op: TileOp) => number = (op) => OP_WEIGHT[op],
): void {
  const succ: number[][] = tasks.map(() => []);
  for (const t of tasks) for (const d of t.deps) succ[d]!.push(t.id);
  const level = new Float64Array(tasks.length);
  for (let i = tasks.length - 1; i >= 0; i--) {
    let m = 0;
    for (const s of succ[i]!) if (level[s]! > m) m = level[s]!;
    level[i] = weight(tasks[i]!.op) + m;
  }
  for (const t of tasks) t.priority = Math.round(level[t.id]! * 1000) / 1000;
}

/** Right-looking lower tiled Cholesky of an nt x nt tile matrix; tile (m, n) has id m·nt + n. */
export function choleskyGraph(nt: number): TileGraph {
  const b = new Builder(nt * nt);
  const T = (m: number, n: number): number => m * nt + n;
  for (let k = 0; k < nt; k++) {
    b.add('potrf', `potrf(${k})`, [], [T(k, k)]);
    for (let m = k + 1; m < nt; m++) b.add('trsm', `trsm(${m},${k})`, [T(k, k)], [T(m, k)]);
    for (let n = k + 1; n < nt; n++) {
      b.add('syrk', `syrk(${n},${k})`, [T(n, k)], [T(n, n)]);
      for (let m = n + 1; m < nt; m++) b.add('gemm', `gemm(${m},${n},${k})`, [T(m, k), T(n, k)], [T(m, n)]);
    }
  }
  setCriticalPathPriorities(b.tasks);
  return { tasks: b.tasks, tiles: nt * nt, nt };
}

/**
 * Tiled GEMM C += A·B with nt x nt tiles each: tiles of A are ids 0..nt²-1, B nt²..2nt²-1,
 * C 2nt²..3nt²-1. Each C tile is a chain of nt GEMMs.
 */
export function gemmGraph(nt: number): TileGraph {
  const b = new Builder(3 * nt * nt);
  const A = (i: number, k: number): number => i * nt + k;
  const B = (k: number, j: number): number => nt * nt + k * nt + j;
  const C = (i: number, j: number): number => 2 * nt * nt + i * nt + j;
  for (let k = 0; k < nt; k++)
    for (let i = 0; i < nt; i++)
      for (let j = 0; j < nt; j++) b.add('gemm', `gemm(${i},${j},${k})`, [A(i, k), B(k, j)], [C(i, j)]);
  setCriticalPathPriorities(b.tasks);
  return { tasks: b.tasks, tiles: 3 * nt * nt, nt };
}

export function opCounts(g: TileGraph): Record<TileOp, number> {
  const c: Record<TileOp, number> = { potrf: 0, trsm: 0, syrk: 0, gemm: 0 };
  for (const t of g.tasks) c[t.op]++;
  return c;
}
