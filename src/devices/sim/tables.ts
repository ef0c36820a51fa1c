/**
 * Timing tables for simulated machines: per-kernel run times (µs) per device type and tile size, and
 * the bus between host and GPUs. Durations come from these tables, never from the host running the
 * simulation, so scheduling quality is measured apart from this (shared, loaded) machine.
 *
 * Source of the shipped tables: StarPU's own SimGrid sampling data, single precision tiled Cholesky,
 * mean µs per kernel (GPU = average over the machine's GPUs), files
 * `tools/perfmodels/sampling/codelets/45/chol_model_{potrf,trsm,syrk,gemm}.<machine>` and bus figures
 * from `tools/perfmodels/sampling/bus/<machine>.{bandwidth,latency}` in
 * https://github.com/starpu-runtime/starpu (mirror of gitlab.inria.fr/starpu/starpu), as tabulated in
 * the team's research note ../shared/research/anchors-runtimes.md §1 ("Shipped per-kernel timing
 * tables"). attila's bus is its `attila.bandwidth` row host -> GPU (6009 MB/s); mirage ships no bus
 * file, so it gets attila's (same PCIe 2.0 generation, labelled below).
 */

export type SimDeviceType = 'cpu' | 'gpu';
export type TileOp = 'potrf' | 'trsm' | 'syrk' | 'gemm';

export interface LinkFigures {
  /** Bytes per second. */
  readonly bandwidth: number;
  readonly latencyUs: number;
}

export interface TimingTable {
  readonly machine: string;
  readonly description: string;
  readonly source: string;
  readonly tile: number;
  readonly dtype: 'f32' | 'f64';
  /** Mean µs of one task per device type (one CPU core, one GPU). */
  readonly us: Readonly<Record<TileOp, Readonly<Record<SimDeviceType, number>>>>;
  readonly hostToGpu: LinkFigures;
  readonly gpuToGpu: LinkFigures;
}

const STARPU =
  'StarPU tools/perfmodels/sampling (chol_model_*.<machine>, bus/<machine>.*), via research/anchors-runtimes.md';
const ms = (cpu: number, gpu: number): Record<SimDeviceType, number> => ({
  cpu: cpu * 1000,
  gpu: gpu * 1000,
});

export const STARPU_TABLES: Readonly<Record<string, TimingTable>> = {
  'sirocco-960': {
    machine: 'sirocco',
    description: 'StarPU sirocco: 24 Haswell cores + 4 Tesla K40m, SP tile 960',
    source: STARPU,
    tile: 960,
    dtype: 'f32',
    us: { potrf: ms(7.38, 8.25), trsm: ms(17.8, 2.02), syrk: ms(17.5, 0.375), gemm: ms(34.9, 0.749) },
    hostToGpu: { bandwidth: 10.5e9, latencyUs: 10 },
    gpuToGpu: { bandwidth: 7.6e9, latencyUs: 22 },
  },
  'sirocco-1440': {
    machine: 'sirocco',
    description: 'StarPU sirocco: 24 Haswell cores + 4 Tesla K40m, SP tile 1440',
    source: STARPU,
    tile: 1440,
    dtype: 'f32',
    us: { potrf: ms(18.4, 30.5), trsm: ms(60.9, 5.48), syrk: ms(56.0, 1.29), gemm: ms(112, 2.58) },
    hostToGpu: { bandwidth: 10.5e9, latencyUs: 10 },
    gpuToGpu: { bandwidth: 7.6e9, latencyUs: 22 },
  },
  'mirage-960': {
    machine: 'mirage',
    description: 'StarPU mirage: 12 Westmere cores + 3 Tesla M2070, SP tile 960 (bus: attila figures)',
    source: STARPU,
    tile: 960,
    dtype: 'f32',
    us: { potrf: ms(18.9, 5.48), trsm: ms(45.6, 6.41), syrk: ms(43.9, 1.41), gemm: ms(87.8, 2.82) },
    hostToGpu: { bandwidth: 6.0e9, latencyUs: 10 },
    gpuToGpu: { bandwidth: 6.0e9, latencyUs: 20 },
  },
  'attila-960': {
    machine: 'attila',
    description: 'StarPU attila: 12 Westmere cores + 3 Fermi C2050, SP tile 960',
    source: STARPU,
    tile: 960,
    dtype: 'f32',
    us: { potrf: ms(75.9, 46.0), trsm: ms(43.6, 6.31), syrk: ms(42.0, 1.4), gemm: ms(84.1, 2.81) },
    hostToGpu: { bandwidth: 6.0e9, latencyUs: 10 },
    gpuToGpu: { bandwidth: 6.0e9, latencyUs: 20 },
  },
};

export const DEFAULT_TABLE = 'sirocco-960';

/** Flops of one tile op on an n x n tile (the usual LAPACK counts). */
export function tileFlops(op: TileOp, n: number): number {
  switch (op) {
    case 'potrf':
      return n ** 3 / 3;
    case 'trsm':
      return n ** 3;
    case 'syrk':
      return n ** 3;
    case 'gemm':
      return 2 * n ** 3;
  }
}

export interface MachineFigures {
  readonly name: string;
  /** Sustained rate of one CPU core and one GPU per op (FLOP/s); potrf runs far below GEMM rate. */
  readonly cpuFlops: Readonly<Record<TileOp, number>>;
  readonly gpuFlops: Readonly<Record<TileOp, number>>;
  readonly hostToGpu: LinkFigures;
  readonly gpuToGpu: LinkFigures;
  readonly dtype?: 'f32' | 'f64';
}

/**
 * The generator for other machines: a table from per-op sustained rates (measured with
 * `tandem models` on the real machine, or from vendor figures) at a tile size. Small tiles pay the
 * fixed launch cost, which is what makes GPUs lose on small tasks.
 */
export function generateTable(m: MachineFigures, tile: number, launchUs = { cpu: 2, gpu: 8 }): TimingTable {
  const ops: TileOp[] = ['potrf', 'trsm', 'syrk', 'gemm'];
  const us = {} as Record<TileOp, Record<SimDeviceType, number>>;
  for (const op of ops) {
    const f = tileFlops(op, tile);
    us[op] = {
      cpu: launchUs.cpu + (f / m.cpuFlops[op]) * 1e6,
      gpu: launchUs.gpu + (f / m.gpuFlops[op]) * 1e6,
    };
  }
  return {
    machine: m.name,
    description: `generated for ${m.name}, tile ${tile}`,
    source: 'generateTable (per-op rates)',
    tile,
    dtype: m.dtype ?? 'f32',
    us,
    hostToGpu: m.hostToGpu,
    gpuToGpu: m.gpuToGpu,
  };
}

/** Scales a table to another tile size (n³ for the compute, n² for the data). */
export function rescaleTable(t: TimingTable, tile: number): TimingTable {
  const f = (tile / t.tile) ** 3;
  const us = {} as Record<TileOp, Record<SimDeviceType, number>>;
  for (const [op, v] of Object.entries(t.us) as Array<[TileOp, Record<SimDeviceType, number>]>)
    us[op] = { cpu: v.cpu * f, gpu: v.gpu * f };
  return { ...t, tile, us, description: `${t.description}, rescaled to tile ${tile}` };
}
