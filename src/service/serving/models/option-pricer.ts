/**
 * The option pricer as a served model (kind 'option-pricer'): one request is one European option's
 * terms, one batch is one mc_european_batch launch (on a GPU; split over the CPU workers on the CPU).
 * A price is the same whichever batch it lands in: each option draws the Philox streams a single
 * `priceOption` of the same seed draws.
 *
 * The lane's p99 target (1 ms over HTTP for 10^6 paths) is mostly the event loop's: parse allocates one
 * small object per request and runBatch one terms array and one result object per item, so a request
 * leaves little for the scavenger (bench/RESULTS.md: scavenges were the in-process price's p99).
 */
import { availableParallelism } from 'node:os';
import { TandemError } from '../../../core/errors.js';
import { mcSpec, type McSpec } from '../../../kernels/mc_common/engine.js';
import { OPTION_FIELDS } from '../../../workloads/risk/params.js';
import { priceEuropeanBatch, type BatchPrice } from '../../../workloads/risk/batch.js';
import {
  asRecord,
  bool,
  noExtraKeys,
  numberField,
  numOf,
  oneOf,
  paramsSchema,
} from '../../../workloads/validate.js';
import type { ServiceRuntime } from '../../jobs/job-type.js';
import type { BatchContext, ModelFactory, ModelSpec, ServedModel } from '../model.js';

export const OPTION_PRICER_MAX_BATCH = 64;
const DEFAULT_MAX_PATHS = 2 ** 26;

const INPUT_FIELDS = {
  right: OPTION_FIELDS.right,
  spot: OPTION_FIELDS.spot,
  strike: OPTION_FIELDS.strike,
  rate: OPTION_FIELDS.rate,
  vol: OPTION_FIELDS.vol,
  maturity: OPTION_FIELDS.maturity,
  dividend: OPTION_FIELDS.dividend,
  paths: OPTION_FIELDS.paths,
  antithetic: OPTION_FIELDS.antithetic,
  seed: OPTION_FIELDS.seed,
};
const INPUT_KEYS = Object.keys(INPUT_FIELDS);

const INPUT_SCHEMA = paramsSchema(INPUT_FIELDS, {
  description: 'one European option (defaults as the option job)',
  examples: [{ right: 'call', spot: 100, strike: 100, rate: 0.05, vol: 0.2, maturity: 1, paths: 1_000_000 }],
});

const OUTPUT_SCHEMA = {
  type: 'object',
  required: ['price', 'stdError', 'paths'],
  properties: {
    price: { type: 'number', description: 'discounted mean payoff' },
    stdError: { type: 'number', description: 'standard error of the price' },
    paths: { type: 'integer', description: 'paths simulated' },
  },
};

const CONFIG_FIELDS = {
  maxPaths: numberField(
    { ge: 2, le: 2 ** 40, integer: true },
    DEFAULT_MAX_PATHS,
    'most paths one request may ask for',
  ),
  defaultPaths: numberField(
    { ge: 2, le: 2 ** 40, integer: true },
    1_000_000,
    'paths when a request gives none',
  ),
};

interface PricerConfig {
  readonly maxPaths: number;
  readonly defaultPaths: number;
}

function readConfig(config: Readonly<Record<string, unknown>>): PricerConfig {
  const c = asRecord(config, 'config');
  noExtraKeys(c, Object.keys(CONFIG_FIELDS), 'config');
  const maxPaths = numOf(c, 'maxPaths', CONFIG_FIELDS.maxPaths, 'config.');
  const defaultPaths = numOf(c, 'defaultPaths', CONFIG_FIELDS.defaultPaths, 'config.');
  if (defaultPaths > maxPaths) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'config.defaultPaths must not exceed config.maxPaths',
      {
        field: 'config.defaultPaths',
      },
    );
  }
  return { maxPaths, defaultPaths };
}

/** Parses one request's option; throws INVALID_ARGUMENT (or LIMIT for too many paths) for it alone. */
export function parseOption(inputs: unknown, cfg: PricerConfig): McSpec {
  const p = asRecord(inputs, 'inputs');
  noExtraKeys(p, INPUT_KEYS, 'inputs');
  const F = INPUT_FIELDS;
  const at = 'inputs.';
  const paths = p.paths === undefined ? cfg.defaultPaths : numOf(p, 'paths', F.paths, at);
  if (paths > cfg.maxPaths) {
    throw new TandemError('TANDEM_ERR_LIMIT', `inputs.paths: at most ${cfg.maxPaths} paths a request`, {
      field: 'inputs.paths',
      limit: cfg.maxPaths,
    });
  }
  // The engine's spec straight from the fields: no intermediate terms object per request.
  return mcSpec({
    kind: 'european',
    steps: 1,
    right: oneOf(p, 'right', F.right.choices, F.right.default, at),
    spot: numOf(p, 'spot', F.spot, at),
    strike: numOf(p, 'strike', F.strike, at),
    rate: numOf(p, 'rate', F.rate, at),
    vol: numOf(p, 'vol', F.vol, at),
    maturity: numOf(p, 'maturity', F.maturity, at),
    dividend: numOf(p, 'dividend', F.dividend, at),
    paths,
    antithetic: bool(p, 'antithetic', F.antithetic.default, at),
    seed: numOf(p, 'seed', F.seed, at),
  });
}

/** True when `device` (a kind, an id, or undefined: the scheduler's choice) means the CPU only. */
function cpuOnly(rt: ServiceRuntime, device: string | undefined): boolean {
  for (const d of rt.devices) {
    const { kind, id } = d.info;
    if (kind !== 'cpu' && (device === undefined || device === kind || device === id)) return false;
  }
  return true;
}

/**
 * A price the float arithmetic could not hold (a spot of 1e300, or vol 10 over 100 years: e^600) is
 * NaN or ±Inf, which JSON writes as null in a 200; it fails alone, as the classifiers' overflow does.
 */
function finiteOrUnstable(p: BatchPrice): BatchPrice | TandemError {
  if (Number.isFinite(p.price) && Number.isFinite(p.stdError)) return p;
  return new TandemError(
    'TANDEM_ERR_UNSTABLE',
    `the price is not finite (price ${p.price}, stdError ${p.stdError}): the terms overflow the arithmetic`,
    { price: String(p.price), stdError: String(p.stdError) },
  );
}

class OptionPricer implements ServedModel<McSpec, BatchPrice> {
  readonly kind = 'option-pricer';
  readonly inputSchema = INPUT_SCHEMA;
  readonly outputSchema = OUTPUT_SCHEMA;
  readonly maxBatchSize = OPTION_PRICER_MAX_BATCH;
  readonly weightBytes = 0;

  constructor(
    readonly name: string,
    readonly version: number,
    private readonly cfg: PricerConfig,
  ) {}

  parse(inputs: unknown): McSpec {
    return parseOption(inputs, this.cfg);
  }

  async runBatch(items: readonly McSpec[], ctx: BatchContext): Promise<Array<BatchPrice | TandemError>> {
    // One launch on a GPU; on the CPU a task per worker (a launch there is one core's loop).
    const tasks = cpuOnly(ctx.rt, ctx.device) ? Math.min(items.length, availableParallelism()) : 1;
    const prices = await priceEuropeanBatch(ctx.rt, items, { device: ctx.device, tags: ctx.tags, tasks });
    return prices.map(finiteOrUnstable);
  }

  unload(): Promise<void> {
    return Promise.resolve();
  }
}

export const optionPricerFactory: ModelFactory = {
  kind: 'option-pricer',
  description:
    'European options by Monte Carlo (Philox streams), many prices fused into one launch per batch',
  configSchema: paramsSchema(CONFIG_FIELDS),
  deviceKinds: ['cpu', 'cuda'],
  maxBatchSizeFor: () => OPTION_PRICER_MAX_BATCH,
  create(spec: ModelSpec, _rt: ServiceRuntime): Promise<ServedModel> {
    try {
      const bad = spec.placement.kinds.find((k) => k !== 'cpu' && k !== 'cuda');
      if (bad !== undefined) {
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `option-pricer runs on cpu or cuda, not ${bad}`,
          {
            field: 'placement.kinds',
          },
        );
      }
      if (spec.weightsPath !== undefined) {
        throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'option-pricer takes no weights file', {
          field: 'weights',
        });
      }
      return Promise.resolve(new OptionPricer(spec.name, spec.version, readConfig(spec.config)));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  },
};
