/**
 * MD job parameters: the JSON the service's `md` job type and `tandem run md` accept, their validation
 * (clear TANDEM_ERR_INVALID_ARGUMENT errors before anything runs) and the presets.
 */
import {
  asRecord,
  bool,
  boolField,
  enumField,
  invalid,
  noExtraKeys,
  num,
  numberField,
  numberSchema,
  numOf,
  oneOf,
  paramsSchema,
  type FieldSpec,
} from '../validate.js';
import { DEVICE_CHOICES, type DeviceChoice } from '../tasks.js';

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

/** Largest system a job may ask for: 4 * 256^3 = 67M atoms (~5 GB of f32 state on a GPU). */
const MAX_CELLS_PER_SIDE = 256;

const CELLS_RULE = { ge: 1, le: MAX_CELLS_PER_SIDE, integer: true } as const;

/**
 * A default the schema may publish: the value every preset agrees on (a preset changes the others, and
 * a default filled in by the schema would override the preset).
 */
function presetDefault<K extends keyof MdConfig>(key: K): MdConfig[K] | undefined {
  const values = Object.values(MD_PRESETS).map((p) => p[key]);
  return values.every((v) => v === values[0]) ? values[0] : undefined;
}
const presetNumber = (key: 'density' | 'temperature' | 'seed' | 'cutoff' | 'skin' | 'neighEvery' | 'dt') =>
  presetDefault(key);

/** The md job's parameters: validateMdParams reads these, and the published schema is made of them. */
export const MD_FIELDS = {
  preset: enumField(
    Object.keys(MD_PRESETS),
    undefined,
    'starting point (default lammps-lj); other fields override it',
  ),
  cells: {
    kind: 'schema',
    schema: {
      oneOf: [
        numberSchema(CELLS_RULE),
        { type: 'array', items: numberSchema(CELLS_RULE), minItems: 3, maxItems: 3 },
      ],
    },
    description: 'fcc unit cells per side, or [nx, ny, nz] (lammps-lj: 20, lj-small: 5)',
  },
  atoms: numberField(
    { ge: 4, le: 4 * MAX_CELLS_PER_SIDE ** 3, integer: true },
    undefined,
    'approximate atom count: the cubic cell count with 4c^3 closest to it (overrides cells)',
  ),
  density: numberField({ gt: 0, le: 10 }, presetNumber('density'), 'reduced density'),
  temperature: numberField({ gt: 0 }, presetNumber('temperature'), 'initial reduced temperature'),
  seed: numberField({ ge: 1, le: 2147483647, integer: true }, presetNumber('seed'), 'velocity seed'),
  cutoff: numberField({ gt: 0 }, presetNumber('cutoff'), 'LJ cutoff radius (at most half the box)'),
  shift: boolField(presetDefault('shift'), 'shift the potential to zero at the cutoff'),
  skin: numberField({ ge: 0 }, presetNumber('skin'), 'neighbour list skin'),
  neighEvery: numberField(
    { ge: 1, integer: true },
    presetNumber('neighEvery'),
    'neighbour list rebuild interval (steps)',
  ),
  neighCheck: boolField(
    presetDefault('neighCheck'),
    'rebuild only if an atom moved more than skin/2 (LAMMPS check yes)',
  ),
  dt: numberField({ gt: 0, le: 1 }, presetNumber('dt'), 'time step (reduced units)'),
  steps: numberField(
    { ge: 1, le: 1e9, integer: true },
    undefined,
    'time steps (lammps-lj: 100, lj-small: 1000)',
  ),
  thermoEvery: numberField(
    { ge: 1, integer: true },
    undefined,
    'thermo output interval (default: min(100, steps))',
  ),
  device: enumField(DEVICE_CHOICES, 'auto', 'device kind to run on (auto: the scheduler picks)'),
  precision: enumField(['f64', 'f32'] as const, 'f64', 'floating-point precision of the force kernel'),
} satisfies Record<keyof MdParams, FieldSpec>;

export const MD_SCHEMA = paramsSchema(MD_FIELDS, { examples: [{ preset: 'lj-small', steps: 200 }] });

export function cellsForAtoms(atoms: number): number {
  return Math.max(1, Math.round(Math.cbrt(atoms / 4)));
}

/** fcc lattice constant a = (4/rho)^(1/3), computed as LAMMPS does (pow, not cbrt) so coordinates match bit for bit. */
export function latticeConstant(density: number): number {
  return Math.pow(4 / 1.0 / density, 1.0 / 3);
}

export function validateMdParams(input: unknown): MdConfig {
  const p = asRecord(input ?? {}, 'md');
  noExtraKeys(p, Object.keys(MD_FIELDS), 'md');
  const F = MD_FIELDS;
  let base = LAMMPS_LJ;
  if (p.preset !== undefined) {
    if (typeof p.preset !== 'string' || !(p.preset in MD_PRESETS)) {
      throw invalid('md.preset', `must be one of ${Object.keys(MD_PRESETS).join(', ')}`, p.preset);
    }
    base = MD_PRESETS[p.preset]!;
  }
  let cells: [number, number, number] = [...base.cells];
  if (p.atoms !== undefined) {
    const atoms = numOf(p, 'atoms', F.atoms, 'md.');
    const c = cellsForAtoms(atoms);
    cells = [c, c, c];
  } else if (p.cells !== undefined) {
    const raw = p.cells;
    const list = typeof raw === 'number' ? [raw, raw, raw] : raw;
    if (!Array.isArray(list) || list.length !== 3)
      throw invalid('md.cells', 'must be a number or [nx, ny, nz]', raw);
    cells = list.map((v: unknown, i) => num({ v }, 'v', undefined, CELLS_RULE, `md.cells[${i}]`)) as [
      number,
      number,
      number,
    ];
  }
  // Defaults come from the preset; the rules from MD_FIELDS.
  const density = num(p, 'density', base.density, F.density.rule, 'md.');
  const temperature = num(p, 'temperature', base.temperature, F.temperature.rule, 'md.');
  const seed = num(p, 'seed', base.seed, F.seed.rule, 'md.');
  const cutoff = num(p, 'cutoff', base.cutoff, F.cutoff.rule, 'md.');
  const skin = num(p, 'skin', base.skin, F.skin.rule, 'md.');
  const steps = num(p, 'steps', base.steps, F.steps.rule, 'md.');
  const config: MdConfig = {
    cells,
    density,
    temperature,
    seed,
    cutoff,
    shift: bool(p, 'shift', base.shift, 'md.'),
    skin,
    neighEvery: num(p, 'neighEvery', base.neighEvery, F.neighEvery.rule, 'md.'),
    neighCheck: bool(p, 'neighCheck', base.neighCheck, 'md.'),
    dt: num(p, 'dt', base.dt, F.dt.rule, 'md.'),
    steps,
    thermoEvery: num(p, 'thermoEvery', Math.min(base.thermoEvery, steps), F.thermoEvery.rule, 'md.'),
    device: oneOf(p, 'device', F.device.choices, base.device, 'md.'),
    precision: oneOf(p, 'precision', F.precision.choices, base.precision, 'md.'),
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
