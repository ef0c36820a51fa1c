/**
 * Parameters of the `option` and `var` jobs (and `tandem run option|var`): validation with stable
 * error codes before anything runs, and defaults.
 */
import { DEVICE_CHOICES, type DeviceChoice } from '../tasks.js';
import { asRecord, bool, invalid, noExtraKeys, num, oneOf } from '../validate.js';
import type { McTerms } from './mc.js';
import { parsePortfolio, type Portfolio } from './portfolio.js';

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

const OPTION_KEYS = [
  'type',
  'right',
  'spot',
  'strike',
  'rate',
  'vol',
  'maturity',
  'dividend',
  'steps',
  'paths',
  'antithetic',
  'seed',
  'device',
  'tasks',
];

export function validateOptionParams(input: unknown): OptionConfig {
  const p = asRecord(input ?? {}, 'option');
  noExtraKeys(p, OPTION_KEYS, 'option');
  const d = OPTION_DEFAULTS;
  const at = 'option.';
  const kind = oneOf(p, 'type', ['european', 'asian'] as const, d.kind, at);
  return {
    kind,
    right: oneOf(p, 'right', ['call', 'put'] as const, d.right, at),
    spot: num(p, 'spot', d.spot, { gt: 0 }, at),
    strike: num(p, 'strike', d.strike, { gt: 0 }, at),
    rate: num(p, 'rate', d.rate, { gt: -1, lt: 1 }, at),
    vol: num(p, 'vol', d.vol, { gt: 0, le: 10 }, at),
    maturity: num(p, 'maturity', d.maturity, { gt: 0, le: 100 }, at),
    dividend: num(p, 'dividend', d.dividend, { ge: 0, lt: 1 }, at),
    steps: kind === 'european' ? 1 : num(p, 'steps', d.steps, { ge: 1, le: 100_000, integer: true }, at),
    paths: num(p, 'paths', d.paths, { ge: 2, le: MAX_PATHS, integer: true }, at),
    antithetic: bool(p, 'antithetic', d.antithetic, at),
    seed: num(p, 'seed', d.seed, { ge: 0, le: MAX_SEED, integer: true }, at),
    device: oneOf(p, 'device', DEVICE_CHOICES, d.device, at),
    tasks: p.tasks === undefined ? null : num(p, 'tasks', undefined, { ge: 1, le: 65536, integer: true }, at),
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

export function validateVarParams(input: unknown): VarConfig {
  const p = asRecord(input ?? {}, 'var');
  noExtraKeys(p, ['portfolio', 'horizon', 'confidence', 'scenarios', 'seed', 'device', 'tasks'], 'var');
  if (p.portfolio === undefined) throw invalid('var.portfolio', 'is required');
  const at = 'var.';
  return {
    portfolio: parsePortfolio(p.portfolio),
    horizon: num(p, 'horizon', 10 / 252, { gt: 0, le: 10 }, at),
    confidence: num(p, 'confidence', 0.99, { gt: 0.5, lt: 1 }, at),
    scenarios: num(p, 'scenarios', 100_000, { ge: 100, le: 2 ** 31, integer: true }, at),
    seed: num(p, 'seed', 20261202, { ge: 0, le: MAX_SEED, integer: true }, at),
    device: oneOf(p, 'device', DEVICE_CHOICES, 'auto', at),
    tasks: p.tasks === undefined ? null : num(p, 'tasks', undefined, { ge: 1, le: 65536, integer: true }, at),
  };
}
