/**
 * Parameters of the `option` and `var` jobs (and `tandem run option|var`): validation with stable
 * error codes before anything runs, and defaults.
 */
import {
  asRecord,
  bool,
  boolField,
  enumField,
  invalid,
  noExtraKeys,
  numberField,
  numOf,
  oneOf,
  paramsSchema,
} from '../validate.js';
import { DEVICE_CHOICES, type DeviceChoice } from '../tasks.js';
import type { McTerms } from './mc.js';
import { parsePortfolio, PORTFOLIO_SCHEMA, type Portfolio } from './portfolio.js';

export type RiskDevice = DeviceChoice;

export interface OptionParams {
  type?: 'european' | 'asian';
  right?: 'call' | 'put';
  spot?: number;
  strike?: number;
  rate?: number;
  vol?: number;
  maturity?: number;
  dividend?: number;
  /** Monitoring dates of an Asian option (equally spaced, the last at maturity). */
  steps?: number;
  paths?: number;
  antithetic?: boolean;
  seed?: number;
  device?: RiskDevice;
  /** How many tasks the paths are split into (default: enough to keep every device busy). */
  tasks?: number;
}

export interface OptionConfig extends McTerms {
  device: RiskDevice;
  tasks: number | null;
}

/** Largest job: 2^40 paths (hours on a CPU, a few seconds on an H200). */
const MAX_PATHS = 2 ** 40;
const MAX_SEED = Number.MAX_SAFE_INTEGER;

export const OPTION_DEFAULTS: OptionConfig = {
  kind: 'european',
  right: 'call',
  spot: 100,
  strike: 100,
  rate: 0.05,
  vol: 0.2,
  maturity: 1,
  dividend: 0,
  steps: 12,
  paths: 1_000_000,
  antithetic: true,
  seed: 20261202,
  device: 'auto',
  tasks: null,
};

const DEVICES = DEVICE_CHOICES;
const TASKS = numberField(
  { ge: 1, le: 65536, integer: true },
  undefined,
  'tasks the work is split into (default: enough to keep every device busy)',
);

/** The option job's parameters: the validator below reads these, and the published schema is made of them. */
export const OPTION_FIELDS = {
  type: enumField(
    ['european', 'asian'] as const,
    OPTION_DEFAULTS.kind,
    'payoff: at maturity, or on the arithmetic average',
  ),
  right: enumField(['call', 'put'] as const, OPTION_DEFAULTS.right, 'call or put'),
  spot: numberField({ gt: 0 }, OPTION_DEFAULTS.spot, 'spot price of the underlying'),
  strike: numberField({ gt: 0 }, OPTION_DEFAULTS.strike, 'strike price'),
  rate: numberField({ gt: -1, lt: 1 }, OPTION_DEFAULTS.rate, 'risk-free rate (continuous, per year)'),
  vol: numberField({ gt: 0, le: 10 }, OPTION_DEFAULTS.vol, 'volatility (per year)'),
  maturity: numberField({ gt: 0, le: 100 }, OPTION_DEFAULTS.maturity, 'time to maturity in years'),
  dividend: numberField({ ge: 0, lt: 1 }, OPTION_DEFAULTS.dividend, 'continuous dividend yield'),
  steps: numberField(
    { ge: 1, le: 100_000, integer: true },
    OPTION_DEFAULTS.steps,
    'monitoring dates of an Asian option (ignored for European)',
  ),
  paths: numberField({ ge: 2, le: MAX_PATHS, integer: true }, OPTION_DEFAULTS.paths, 'Monte Carlo paths'),
  antithetic: boolField(
    OPTION_DEFAULTS.antithetic,
    'antithetic variates (halves the variance for smooth payoffs)',
  ),
  seed: numberField(
    { ge: 0, le: MAX_SEED, integer: true },
    OPTION_DEFAULTS.seed,
    'Philox seed (same seed, same price)',
  ),
  device: enumField(DEVICES, OPTION_DEFAULTS.device, 'device kind to run on (auto: the scheduler picks)'),
  tasks: TASKS,
};

const OPTION_KEYS = Object.keys(OPTION_FIELDS);

export const OPTION_SCHEMA = paramsSchema(OPTION_FIELDS, {
  examples: [
    {
      type: 'european',
      right: 'call',
      spot: 100,
      strike: 100,
      rate: 0.05,
      vol: 0.2,
      maturity: 1,
      paths: 1_000_000,
    },
  ],
});

export function validateOptionParams(input: unknown): OptionConfig {
  const p = asRecord(input ?? {}, 'option');
  noExtraKeys(p, OPTION_KEYS, 'option');
  const F = OPTION_FIELDS;
  const at = 'option.';
  const kind = oneOf(p, 'type', F.type.choices, F.type.default, at);
  // Checked for every type (as the published schema says), used for Asian options only.
  const steps = numOf(p, 'steps', F.steps, at);
  return {
    kind,
    right: oneOf(p, 'right', F.right.choices, F.right.default, at),
    spot: numOf(p, 'spot', F.spot, at),
    strike: numOf(p, 'strike', F.strike, at),
    rate: numOf(p, 'rate', F.rate, at),
    vol: numOf(p, 'vol', F.vol, at),
    maturity: numOf(p, 'maturity', F.maturity, at),
    dividend: numOf(p, 'dividend', F.dividend, at),
    steps: kind === 'european' ? 1 : steps,
    paths: numOf(p, 'paths', F.paths, at),
    antithetic: bool(p, 'antithetic', F.antithetic.default, at),
    seed: numOf(p, 'seed', F.seed, at),
    device: oneOf(p, 'device', F.device.choices, F.device.default, at),
    tasks: p.tasks === undefined ? null : numOf(p, 'tasks', F.tasks, at),
  };
}

export interface VarParams {
  portfolio?: unknown;
  /** Horizon in years (default 10 trading days). */
  horizon?: number;
  /** VaR confidence level, e.g. 0.99. */
  confidence?: number;
  scenarios?: number;
  seed?: number;
  device?: RiskDevice;
  tasks?: number;
}

export interface VarConfig {
  portfolio: Portfolio;
  horizon: number;
  confidence: number;
  scenarios: number;
  seed: number;
  device: RiskDevice;
  tasks: number | null;
}

/** A two-asset example portfolio (the CLI's default and the docs' example). */
export const EXAMPLE_PORTFOLIO = {
  rate: 0.03,
  assets: [
    { name: 'ACME', spot: 100, vol: 0.25, drift: 0.06 },
    { name: 'GLOBEX', spot: 50, vol: 0.35, drift: 0.08, dividend: 0.01 },
  ],
  correlation: [
    [1, 0.6],
    [0.6, 1],
  ],
  positions: [
    { type: 'stock', asset: 'ACME', quantity: 1000 },
    { type: 'stock', asset: 'GLOBEX', quantity: 2000 },
    { type: 'european', asset: 'ACME', right: 'put', strike: 95, maturity: 0.5, quantity: 500 },
    { type: 'european', asset: 'GLOBEX', right: 'call', strike: 55, maturity: 1, quantity: -1000 },
  ],
};

/** The var job's parameters (validator and published schema alike). */
export const VAR_FIELDS = {
  portfolio: {
    kind: 'schema',
    schema: PORTFOLIO_SCHEMA,
    description: 'assets, correlation, rate and positions',
  },
  horizon: numberField({ gt: 0, le: 10 }, 10 / 252, 'horizon in years (default: 10 trading days)'),
  confidence: numberField({ gt: 0.5, lt: 1 }, 0.99, 'VaR confidence level'),
  scenarios: numberField({ ge: 100, le: 2 ** 31, integer: true }, 100_000, 'Monte Carlo scenarios'),
  seed: numberField({ ge: 0, le: MAX_SEED, integer: true }, 20261202, 'Philox seed'),
  device: enumField(DEVICES, 'auto', 'device kind to run on (auto: the scheduler picks)'),
  tasks: TASKS,
} as const;

export const VAR_SCHEMA = paramsSchema(VAR_FIELDS, {
  required: ['portfolio'],
  examples: [{ portfolio: EXAMPLE_PORTFOLIO, confidence: 0.99, scenarios: 100_000 }],
});

export function validateVarParams(input: unknown): VarConfig {
  const p = asRecord(input ?? {}, 'var');
  noExtraKeys(p, Object.keys(VAR_FIELDS), 'var');
  if (p.portfolio === undefined) throw invalid('var.portfolio', 'is required');
  const F = VAR_FIELDS;
  const at = 'var.';
  return {
    portfolio: parsePortfolio(p.portfolio),
    horizon: numOf(p, 'horizon', F.horizon, at),
    confidence: numOf(p, 'confidence', F.confidence, at),
    scenarios: numOf(p, 'scenarios', F.scenarios, at),
    seed: numOf(p, 'seed', F.seed, at),
    device: oneOf(p, 'device', F.device.choices, F.device.default, at),
    tasks: p.tasks === undefined ? null : numOf(p, 'tasks', F.tasks, at),
  };
}
