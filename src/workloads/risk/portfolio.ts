/**
 * Portfolios as JSON: validation (unknown instrument types, unknown assets, impossible terms are errors
 * with the offending path), the Cholesky factor of the correlation matrix, and the flat numeric form
 * that the scenario kernels consume.
 */
import {
  asRecord,
  fieldSchema,
  invalid,
  noExtraKeys,
  num,
  numberField,
  numberSchema,
  numOf,
  oneOf,
  paramsSchema,
} from '../validate.js';

export const INSTRUMENT_TYPES = ['stock', 'european'] as const;
export type InstrumentType = (typeof INSTRUMENT_TYPES)[number];

export interface AssetJson {
  name: string;
  spot: number;
  vol: number;
  /** Real-world drift for the horizon scenarios (default: the portfolio's rate). */
  drift?: number;
  dividend?: number;
}

export type PositionJson =
  | { type: 'stock'; asset: string; quantity: number }
  | {
      type: 'european';
      asset: string;
      right: 'call' | 'put';
      strike: number;
      maturity: number;
      quantity: number;
    };

export interface PortfolioJson {
  assets: AssetJson[];
  /** Asset correlation matrix (default: identity). */
  correlation?: number[][];
  rate: number;
  positions: PositionJson[];
}

/** Numeric form: per asset and per position arrays, ready to be copied into tensors. */
export interface Portfolio {
  readonly json: PortfolioJson;
  readonly assets: number;
  readonly spot: Float64Array;
  readonly vol: Float64Array;
  readonly drift: Float64Array;
  readonly dividend: Float64Array;
  /** Lower-triangular Cholesky factor of the correlation matrix, row-major assets x assets. */
  readonly chol: Float64Array;
  readonly rate: number;
  readonly positions: number;
  readonly posAsset: Int32Array;
  /** 0 stock, 1 call, 2 put. */
  readonly posKind: Int32Array;
  readonly posStrike: Float64Array;
  readonly posMaturity: Float64Array;
  readonly posQuantity: Float64Array;
}

const MAX_ASSETS = 4096;
const MAX_POSITIONS = 100_000;

/** An asset's numbers (parsePortfolio reads these; PORTFOLIO_SCHEMA publishes them). */
const ASSET_FIELDS = {
  spot: numberField({ gt: 0 }, undefined, 'spot price'),
  vol: numberField({ ge: 0, le: 10 }, undefined, 'volatility (per year)'),
  /** The default is the portfolio's rate, so the schema shows none. */
  drift: numberField(
    { gt: -10, lt: 10 },
    undefined,
    "real-world drift per year (default: the portfolio's rate)",
  ),
  dividend: numberField({ ge: 0, lt: 1 }, 0, 'continuous dividend yield'),
};
const RATE = numberField({ gt: -1, lt: 1 }, 0, 'risk-free rate (continuous, per year)');
const POSITION_FIELDS = {
  quantity: numberField({}, undefined, 'units held (negative: short)'),
  strike: numberField({ gt: 0 }, undefined, 'strike price (european only)'),
  maturity: numberField({ gt: 0, le: 100 }, undefined, 'years to maturity (european only)'),
};

/** JSON Schema of a portfolio: the shape and ranges; names, matrix symmetry and the like are checked in parsePortfolio. */
export const PORTFOLIO_SCHEMA: Readonly<Record<string, unknown>> = {
  type: 'object',
  additionalProperties: false,
  required: ['assets', 'positions'],
  properties: {
    assets: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_ASSETS,
      items: {
        ...paramsSchema(ASSET_FIELDS, { required: ['name', 'spot', 'vol'] }),
        properties: {
          name: { type: 'string', minLength: 1, description: 'unique asset name' },
          ...(paramsSchema(ASSET_FIELDS)['properties'] as object),
        },
      },
    },
    correlation: {
      type: 'array',
      description: 'assets x assets correlation matrix, symmetric with a unit diagonal (default: identity)',
      items: { type: 'array', items: numberSchema({ ge: -1, le: 1 }) },
    },
    rate: fieldSchema(RATE),
    positions: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_POSITIONS,
      items: {
        type: 'object',
        additionalProperties: false,
        description: 'a stock, or a european option (which also needs right, strike and maturity)',
        required: ['type', 'asset', 'quantity'],
        properties: {
          type: { type: 'string', enum: [...INSTRUMENT_TYPES] },
          asset: { type: 'string', description: 'the name of one of the assets' },
          right: { type: 'string', enum: ['call', 'put'], description: 'call or put (european only)' },
          ...(paramsSchema(POSITION_FIELDS)['properties'] as object),
        },
      },
    },
  },
};

export function cholesky(corr: readonly (readonly number[])[]): Float64Array {
  const d = corr.length;
  const l = new Float64Array(d * d);
  for (let i = 0; i < d; i++) {
    for (let j = 0; j <= i; j++) {
      let s = corr[i]![j]!;
      for (let k = 0; k < j; k++) s -= l[i * d + k]! * l[j * d + k]!;
      if (i === j) {
        // A pivot at or below this tolerance means the matrix is singular or indefinite: the scenarios
        // it would generate have no valid covariance.
        if (!(s > 1e-12)) {
          throw invalid(
            'portfolio.correlation',
            `is not positive definite (Cholesky pivot ${i} is ${s.toPrecision(4)}); check for inconsistent correlations`,
          );
        }
        l[i * d + i] = Math.sqrt(s);
      } else {
        l[i * d + j] = s / l[j * d + j]!;
      }
    }
  }
  return l;
}

function validateCorrelation(raw: unknown, d: number): number[][] {
  if (raw === undefined)
    return Array.from({ length: d }, (_, i) => Array.from({ length: d }, (_, j) => (i === j ? 1 : 0)));
  if (!Array.isArray(raw) || raw.length !== d)
    throw invalid('portfolio.correlation', `must be a ${d}x${d} array`, raw);
  const m = raw.map((row: unknown, i) => {
    if (!Array.isArray(row) || row.length !== d)
      throw invalid(`portfolio.correlation[${i}]`, `must have ${d} entries`, row);
    return row.map((v: unknown, j) =>
      num({ v }, 'v', undefined, { ge: -1, le: 1 }, `portfolio.correlation[${i}][${j}]`),
    );
  });
  for (let i = 0; i < d; i++) {
    if (m[i]![i] !== 1) throw invalid(`portfolio.correlation[${i}][${i}]`, 'must be 1', m[i]![i]);
    for (let j = 0; j < i; j++) {
      if (Math.abs(m[i]![j]! - m[j]![i]!) > 1e-12)
        throw invalid(`portfolio.correlation[${i}][${j}]`, 'must equal its transpose entry', m[i]![j]);
    }
  }
  return m;
}

export function parsePortfolio(input: unknown): Portfolio {
  const p = asRecord(input, 'portfolio');
  noExtraKeys(p, ['assets', 'correlation', 'rate', 'positions'], 'portfolio');
  if (!Array.isArray(p.assets) || p.assets.length === 0 || p.assets.length > MAX_ASSETS) {
    throw invalid('portfolio.assets', `must be a non-empty array of at most ${MAX_ASSETS} assets`, p.assets);
  }
  const rate = numOf(p, 'rate', RATE, 'portfolio.');
  const names = new Map<string, number>();
  const assets: AssetJson[] = p.assets.map((a: unknown, i) => {
    const r = asRecord(a, `portfolio.assets[${i}]`);
    const at = `portfolio.assets[${i}].`;
    noExtraKeys(r, ['name', 'spot', 'vol', 'drift', 'dividend'], `portfolio.assets[${i}]`);
    if (typeof r.name !== 'string' || r.name === '')
      throw invalid(`${at}name`, 'must be a non-empty string', r.name);
    if (names.has(r.name)) throw invalid(`${at}name`, 'is a duplicate', r.name);
    names.set(r.name, i);
    return {
      name: r.name,
      spot: numOf(r, 'spot', ASSET_FIELDS.spot, at),
      vol: numOf(r, 'vol', ASSET_FIELDS.vol, at),
      drift: num(r, 'drift', rate, ASSET_FIELDS.drift.rule, at),
      dividend: numOf(r, 'dividend', ASSET_FIELDS.dividend, at),
    };
  });
  const d = assets.length;
  const correlation = validateCorrelation(p.correlation, d);
  if (!Array.isArray(p.positions) || p.positions.length === 0 || p.positions.length > MAX_POSITIONS) {
    throw invalid(
      'portfolio.positions',
      `must be a non-empty array of at most ${MAX_POSITIONS} positions`,
      p.positions,
    );
  }
  const positions: PositionJson[] = p.positions.map((x: unknown, i) => {
    const r = asRecord(x, `portfolio.positions[${i}]`);
    const at = `portfolio.positions[${i}].`;
    const type = r.type;
    if (typeof type !== 'string' || !(INSTRUMENT_TYPES as readonly string[]).includes(type)) {
      throw invalid(
        `${at}type`,
        `is not a known instrument type (known: ${INSTRUMENT_TYPES.join(', ')})`,
        type,
      );
    }
    if (typeof r.asset !== 'string' || !names.has(r.asset))
      throw invalid(`${at}asset`, 'must name one of the portfolio assets', r.asset);
    const quantity = numOf(r, 'quantity', POSITION_FIELDS.quantity, at);
    if (type === 'stock') {
      noExtraKeys(r, ['type', 'asset', 'quantity'], `portfolio.positions[${i}]`);
      return { type: 'stock', asset: r.asset, quantity };
    }
    noExtraKeys(r, ['type', 'asset', 'right', 'strike', 'maturity', 'quantity'], `portfolio.positions[${i}]`);
    return {
      type: 'european',
      asset: r.asset,
      right: oneOf(r, 'right', ['call', 'put'] as const, undefined, at),
      strike: numOf(r, 'strike', POSITION_FIELDS.strike, at),
      maturity: numOf(r, 'maturity', POSITION_FIELDS.maturity, at),
      quantity,
    };
  });
  const json: PortfolioJson = { assets, correlation, rate, positions };
  const np = positions.length;
  const out: Portfolio = {
    json,
    assets: d,
    spot: Float64Array.from(assets, (a) => a.spot),
    vol: Float64Array.from(assets, (a) => a.vol),
    drift: Float64Array.from(assets, (a) => a.drift ?? rate),
    dividend: Float64Array.from(assets, (a) => a.dividend ?? 0),
    chol: cholesky(correlation),
    rate,
    positions: np,
    posAsset: Int32Array.from(positions, (x) => names.get(x.asset)!),
    posKind: Int32Array.from(positions, (x) => (x.type === 'stock' ? 0 : x.right === 'call' ? 1 : 2)),
    posStrike: Float64Array.from(positions, (x) => (x.type === 'stock' ? 0 : x.strike)),
    posMaturity: Float64Array.from(positions, (x) => (x.type === 'stock' ? 0 : x.maturity)),
    posQuantity: Float64Array.from(positions, (x) => x.quantity),
  };
  return out;
}
