/**
 * MD job parameters: the JSON the service's `md` job type and `tandem run md` accept, their validation
 * (clear TANDEM_ERR_INVALID_ARGUMENT errors before anything runs) and the presets.
 */
import { DEVICE_CHOICES, type DeviceChoice } from '../tasks.js';
import { asRecord, bool, invalid, noExtraKeys, num, oneOf } from '../validate.js';

export type MdDevice = DeviceChoice;
export type MdPrecision = 'f64' | 'f32';

/** What callers send; every field optional except where a preset is not used. */
export interface MdParams {
  preset?: string;
  /** fcc unit cells per side (number) or per axis. */
  cells?: number | [number, number, number];
  /** Approximate atom count: picks the cubic cell count with 4*c^3 closest to it (overrides cells). */
  atoms?: number;
  density?: number;
  temperature?: number;
  seed?: number;
  cutoff?: number;
  /** pair_modify shift yes: E(r) - E(rc). LAMMPS lj/cut default is no shift. */
  shift?: boolean;
  skin?: number;
  /** Neighbour list rebuild interval in steps. */
  neighEvery?: number;
  /** true: at each interval rebuild only if some atom moved more than skin/2 (LAMMPS `check yes`). */
  neighCheck?: boolean;
  dt?: number;
  steps?: number;
  thermoEvery?: number;
  device?: MdDevice;
  precision?: MdPrecision;
}

/** Fully resolved, validated parameters. */
export interface MdConfig {
  readonly cells: readonly [number, number, number];
  readonly density: number;
  readonly temperature: number;
  readonly seed: number;
  readonly cutoff: number;
  readonly shift: boolean;
  readonly skin: number;
  readonly neighEvery: number;
  readonly neighCheck: boolean;
  readonly dt: number;
  readonly steps: number;
  readonly thermoEvery: number;
  readonly device: MdDevice;
  readonly precision: MdPrecision;
}

/** LAMMPS bench/in.lj: 3d LJ melt, 32,000 atoms. */
export const LAMMPS_LJ: MdConfig = {
  cells: [20, 20, 20],
  density: 0.8442,
  temperature: 1.44,
  seed: 87287,
  cutoff: 2.5,
  shift: false,
  skin: 0.3,
  neighEvery: 20,
  neighCheck: false,
  dt: 0.005,
  steps: 100,
  thermoEvery: 100,
  device: 'auto',
  precision: 'f64',
};

export const MD_PRESETS: Readonly<Record<string, MdConfig>> = {
  'lammps-lj': LAMMPS_LJ,
  /** Small system for quick checks and the energy-conservation test (500 atoms). */
  'lj-small': { ...LAMMPS_LJ, cells: [5, 5, 5], steps: 1000, thermoEvery: 100 },
};

const KNOWN = [
  'preset',
  'cells',
  'atoms',
  'density',
  'temperature',
  'seed',
  'cutoff',
  'shift',
  'skin',
  'neighEvery',
  'neighCheck',
  'dt',
  'steps',
  'thermoEvery',
  'device',
  'precision',
];

/** Largest system a job may ask for: 4 * 256^3 = 67M atoms (~5 GB of f32 state on a GPU). */
const MAX_CELLS_PER_SIDE = 256;

export function cellsForAtoms(atoms: number): number {
  return Math.max(1, Math.round(Math.cbrt(atoms / 4)));
}

/** fcc lattice constant a = (4/rho)^(1/3), computed as LAMMPS does (pow, not cbrt) so coordinates match bit for bit. */
export function latticeConstant(density: number): number {
  return Math.pow(4 / 1.0 / density, 1.0 / 3);
}

export function validateMdParams(input: unknown): MdConfig {
  const p = asRecord(input ?? {}, 'md');
  noExtraKeys(p, KNOWN, 'md');
  let base = LAMMPS_LJ;
  if (p.preset !== undefined) {
    if (typeof p.preset !== 'string' || !(p.preset in MD_PRESETS)) {
      throw invalid('md.preset', `must be one of ${Object.keys(MD_PRESETS).join(', ')}`, p.preset);
    }
    base = MD_PRESETS[p.preset]!;
  }
  let cells: [number, number, number] = [...base.cells];
  if (p.atoms !== undefined) {
    const atoms = num(
      p,
      'atoms',
      undefined,
      { ge: 4, le: 4 * MAX_CELLS_PER_SIDE ** 3, integer: true },
      'md.',
    );
    const c = cellsForAtoms(atoms);
    cells = [c, c, c];
  } else if (p.cells !== undefined) {
    const raw = p.cells;
    const list = typeof raw === 'number' ? [raw, raw, raw] : raw;
    if (!Array.isArray(list) || list.length !== 3)
      throw invalid('md.cells', 'must be a number or [nx, ny, nz]', raw);
    cells = list.map((v: unknown, i) =>
      num({ v }, 'v', undefined, { ge: 1, le: MAX_CELLS_PER_SIDE, integer: true }, `md.cells[${i}]`),
    ) as [number, number, number];
  }
  const density = num(p, 'density', base.density, { gt: 0, le: 10 }, 'md.');
  const temperature = num(p, 'temperature', base.temperature, { gt: 0 }, 'md.');
  const seed = num(p, 'seed', base.seed, { ge: 1, le: 2147483647, integer: true }, 'md.');
  const cutoff = num(p, 'cutoff', base.cutoff, { gt: 0 }, 'md.');
  const skin = num(p, 'skin', base.skin, { ge: 0 }, 'md.');
  const steps = num(p, 'steps', base.steps, { ge: 1, le: 1e9, integer: true }, 'md.');
  const config: MdConfig = {
    cells,
    density,
    temperature,
    seed,
    cutoff,
    shift: bool(p, 'shift', base.shift, 'md.'),
    skin,
    neighEvery: num(p, 'neighEvery', base.neighEvery, { ge: 1, integer: true }, 'md.'),
    neighCheck: bool(p, 'neighCheck', base.neighCheck, 'md.'),
    dt: num(p, 'dt', base.dt, { gt: 0, le: 1 }, 'md.'),
    steps,
    thermoEvery: num(p, 'thermoEvery', Math.min(base.thermoEvery, steps), { ge: 1, integer: true }, 'md.'),
    device: oneOf(p, 'device', DEVICE_CHOICES, base.device, 'md.'),
    precision: oneOf(p, 'precision', ['f64', 'f32'] as const, base.precision, 'md.'),
  };
  // Minimum-image convention: the interaction range (cutoff + skin for the neighbour list) must fit in
  // half the shortest box side, otherwise an atom would interact with two images of the same neighbour.
  const a = latticeConstant(density);
  const half = (Math.min(...cells) * a) / 2;
  if (cutoff > half) {
    throw invalid('md.cutoff', `must be <= half the box (${half.toPrecision(6)}); use more cells`, cutoff);
  }
  if (cutoff + skin > half) {
    throw invalid(
      'md.skin',
      `cutoff + skin must be <= half the box (${half.toPrecision(6)}); use more cells`,
      skin,
    );
  }
  return config;
}

export function atomCount(config: Pick<MdConfig, 'cells'>): number {
  return 4 * config.cells[0] * config.cells[1] * config.cells[2];
}
