/**
 * The flags of `tandem run md | option | var`: one per workload parameter (kebab-case flag, camelCase
 * parameter), so the CLI, the service's job types and the library take the same parameters. Values are
 * checked by type here (numbers, booleans, closed sets with suggestions) and by range in the workload's
 * own validator, which also fills the defaults: a flag that is not given is not sent, so a preset's
 * values stay in force. The defaults shown in --help come from the workloads' own constants.
 *
 * Imports only parameter modules (no runtime): `--help` must stay cheap.
 */
import { Option, type Command } from 'commander';
import { LAMMPS_LJ, MD_PRESETS } from '../workloads/md/params.js';
import { EXAMPLE_PORTFOLIO, OPTION_DEFAULTS, validateVarParams } from '../workloads/risk/params.js';
import { DEVICE_KINDS, booleanParser, intParser, numberParser, oneOfParser } from './cli-options.js';

type Parser = (value: string) => unknown;

interface Flag {
  readonly flag: string;
  readonly what: string;
  readonly parse: Parser;
  /** Shown in --help; the validator applies it. */
  readonly def?: unknown;
  /** A bare flag means true (`--shift`), `--shift false` turns it off. */
  readonly boolean?: boolean;
}

const intAtLeast = (min: number): Parser => intParser(min, Number.MAX_SAFE_INTEGER);
/** The workloads take a kind (their validators refuse device ids). */
const device = oneOfParser(['auto', ...DEVICE_KINDS]);

/** `--cells 10` or `--cells 10,10,20`. */
function cellsParser(value: string): number | number[] {
  const parts = value.split(',').map((s) => intParser(1, 256)(s.trim()));
  return parts.length === 1 ? parts[0]! : parts;
}

const MD_FLAGS: readonly Flag[] = [
  { flag: 'preset', what: 'base settings', parse: oneOfParser(Object.keys(MD_PRESETS)), def: 'lammps-lj' },
  {
    flag: 'cells',
    what: 'fcc unit cells per side, or nx,ny,nz',
    parse: cellsParser,
    def: LAMMPS_LJ.cells.join(','),
  },
  {
    flag: 'atoms',
    what: 'approximate atom count (picks a cubic cell count; overrides --cells)',
    parse: intAtLeast(4),
  },
  { flag: 'density', what: 'reduced density', parse: numberParser, def: LAMMPS_LJ.density },
  {
    flag: 'temperature',
    what: 'initial reduced temperature',
    parse: numberParser,
    def: LAMMPS_LJ.temperature,
  },
  { flag: 'seed', what: 'velocity seed', parse: intAtLeast(1), def: LAMMPS_LJ.seed },
  { flag: 'cutoff', what: 'pair cutoff (sigma)', parse: numberParser, def: LAMMPS_LJ.cutoff },
  {
    flag: 'shift',
    what: 'shift the pair energy to 0 at the cutoff',
    parse: booleanParser,
    def: LAMMPS_LJ.shift,
    boolean: true,
  },
  { flag: 'skin', what: 'neighbour list skin (sigma)', parse: numberParser, def: LAMMPS_LJ.skin },
  {
    flag: 'neigh-every',
    what: 'neighbour list rebuild interval in steps',
    parse: intAtLeast(1),
    def: LAMMPS_LJ.neighEvery,
  },
  {
    flag: 'neigh-check',
    what: 'rebuild only when an atom moved more than skin/2',
    parse: booleanParser,
    def: LAMMPS_LJ.neighCheck,
    boolean: true,
  },
  { flag: 'dt', what: 'time step (tau)', parse: numberParser, def: LAMMPS_LJ.dt },
  { flag: 'steps', what: 'time steps (lj-small: 1000)', parse: intAtLeast(1), def: LAMMPS_LJ.steps },
  {
    flag: 'thermo-every',
    what: 'thermo output interval in steps',
    parse: intAtLeast(1),
    def: LAMMPS_LJ.thermoEvery,
  },
  { flag: 'device', what: 'auto, cpu, cuda or webgpu', parse: device, def: LAMMPS_LJ.device },
  {
    flag: 'precision',
    what: 'f64 or f32',
    parse: oneOfParser(['f64', 'f32'] as const),
    def: LAMMPS_LJ.precision,
  },
];

const O = OPTION_DEFAULTS;
const OPTION_FLAGS: readonly Flag[] = [
  {
    flag: 'type',
    what: 'european or asian (arithmetic average)',
    parse: oneOfParser(['european', 'asian'] as const),
    def: O.kind,
  },
  { flag: 'right', what: 'call or put', parse: oneOfParser(['call', 'put'] as const), def: O.right },
  { flag: 'spot', what: 'spot price', parse: numberParser, def: O.spot },
  { flag: 'strike', what: 'strike price', parse: numberParser, def: O.strike },
  { flag: 'rate', what: 'risk-free rate (continuous)', parse: numberParser, def: O.rate },
  { flag: 'vol', what: 'volatility', parse: numberParser, def: O.vol },
  { flag: 'maturity', what: 'maturity in years', parse: numberParser, def: O.maturity },
  { flag: 'dividend', what: 'dividend yield', parse: numberParser, def: O.dividend },
  { flag: 'steps', what: 'monitoring dates of an Asian option', parse: intAtLeast(1), def: O.steps },
  { flag: 'paths', what: 'Monte Carlo paths', parse: intAtLeast(2), def: O.paths },
  { flag: 'antithetic', what: 'antithetic variates', parse: booleanParser, def: O.antithetic, boolean: true },
  { flag: 'seed', what: 'Philox seed', parse: intAtLeast(0), def: O.seed },
  { flag: 'device', what: 'auto, cpu, cuda or webgpu', parse: device, def: O.device },
  {
    flag: 'tasks',
    what: 'tasks the paths are split into (default: enough for every device)',
    parse: intAtLeast(1),
  },
];

/** The var defaults as its validator fills them (the one place they are written down). */
const V = validateVarParams({ portfolio: EXAMPLE_PORTFOLIO });
const VAR_FLAGS: readonly Flag[] = [
  {
    flag: 'portfolio',
    what: 'portfolio JSON file (default: the two-asset example portfolio)',
    parse: (v) => v,
  },
  { flag: 'horizon', what: 'horizon in years', parse: numberParser, def: Number(V.horizon.toPrecision(6)) },
  { flag: 'confidence', what: 'VaR confidence level', parse: numberParser, def: V.confidence },
  { flag: 'scenarios', what: 'Monte Carlo scenarios', parse: intAtLeast(1), def: V.scenarios },
  { flag: 'seed', what: 'Philox seed', parse: intAtLeast(0), def: V.seed },
  { flag: 'device', what: 'auto, cpu, cuda or webgpu', parse: device, def: V.device },
  {
    flag: 'tasks',
    what: 'tasks the scenarios are split into (default: enough for every device)',
    parse: intAtLeast(1),
  },
];

export const WORKLOAD_FLAGS: Readonly<Record<'md' | 'option' | 'var', readonly Flag[]>> = {
  md: MD_FLAGS,
  option: OPTION_FLAGS,
  var: VAR_FLAGS,
};

const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** Adds the workload's flags to its command. */
export function addWorkloadFlags(cmd: Command, name: keyof typeof WORKLOAD_FLAGS): Command {
  for (const f of WORKLOAD_FLAGS[name]) {
    const value = f.boolean ? ' [bool]' : ` <${f.flag === 'portfolio' ? 'file' : 'value'}>`;
    const shown = f.def === undefined ? '' : ` (default: ${String(f.def)})`;
    const opt = new Option(`--${f.flag}${value}`, `${f.what}${shown}`).argParser(f.parse);
    cmd.addOption(opt);
  }
  return cmd;
}

/** The parameters the user gave (camelCase), for the workload's validator. */
export function workloadParams(
  name: keyof typeof WORKLOAD_FLAGS,
  opts: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const f of WORKLOAD_FLAGS[name]) {
    const v = opts[camel(f.flag)];
    if (v !== undefined) params[camel(f.flag)] = v;
  }
  return params;
}
