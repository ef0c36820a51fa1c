/**
 * The configuration of a served GPT (kind 'gpt'): architecture (a preset of GPT_PRESETS and/or explicit
 * dims), precision, seed for the initial weights when no file is given, the scoring output and the
 * generation engine's limits. Parsed once at registration; every error is TANDEM_ERR_INVALID_ARGUMENT.
 */
import { TandemError } from '../../../core/errors.js';
import { PRECISIONS, type Precision } from '../../../nn/context.js';
import { GPT_PRESETS, type GptConfig, gptConfig } from '../../../nn/models/gpt.js';
import type { JsonSchema } from '../../jobs/job-type.js';
import type { ScorePlanLimits } from '../../../nn/inference/index.js';
import type { CodecName } from '../generation/codec.js';
import { defaultCodec } from '../generation/codec.js';

export interface GptServeConfig {
  readonly arch: GptConfig;
  readonly precision: Precision;
  readonly seed: number;
  /** Entries of the top-k list a scoring answer carries by default. */
  readonly topK: number;
  readonly tokenizer: CodecName;
  /** Kept plans of the scoring path (score-plans.ts): the defaults unless the config sets them. */
  readonly scoring: Partial<ScorePlanLimits>;
  readonly generation: {
    readonly maxSequences: number;
    readonly maxLength: number;
    readonly maxCacheBytes: number | undefined;
    readonly maxWaiting: number | undefined;
    readonly prefillTokensPerStep: number | undefined;
  };
}

const DIMS = ['layers', 'heads', 'width', 'context', 'vocab', 'paddedVocab'] as const;

const posInt = { type: 'integer', minimum: 1 };
/** Bounds of the scoring plans' knobs: 2^20 rows of GPT-2 are ~26 GiB of working buffers. */
const MAX_PLAN_ROWS = 2 ** 20;
const MAX_PLAN_MIB = 2 ** 20;

export const GPT_CONFIG_SCHEMA: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    preset: { type: 'string', enum: Object.keys(GPT_PRESETS) },
    ...Object.fromEntries(DIMS.map((d) => [d, posInt])),
    precision: { type: 'string', enum: [...PRECISIONS] },
    seed: { type: 'integer', minimum: 0 },
    topK: { type: 'integer', minimum: 1, maximum: 1024 },
    tokenizer: { type: 'string', enum: ['gpt2', 'bytes', 'none'] },
    scoring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        planRows: { type: 'integer', minimum: 0, maximum: MAX_PLAN_ROWS },
        planMiB: { type: 'integer', minimum: 1, maximum: MAX_PLAN_MIB },
        bucketed: { type: 'boolean' },
        planCopies: { type: 'integer', minimum: 1, maximum: 4 },
      },
    },
    generation: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxSequences: posInt,
        maxLength: posInt,
        maxCacheMiB: { type: 'number', exclusiveMinimum: 0 },
        maxWaiting: posInt,
        prefillTokensPerStep: posInt,
      },
    },
  },
};

function bad(message: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `gpt config: ${message}`);
}

function optInt(
  o: Readonly<Record<string, unknown>>,
  key: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  within = '',
): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw bad(`${within}${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  return v;
}

/** Validates a registration's config (the factory's schema, checked again here: the table may skip ajv). */
export function parseGptConfig(raw: Readonly<Record<string, unknown>>): GptServeConfig {
  const known = new Set([
    'preset',
    ...DIMS,
    'precision',
    'seed',
    'topK',
    'tokenizer',
    'scoring',
    'generation',
  ]);
  const extra = Object.keys(raw).find((k) => !known.has(k));
  if (extra !== undefined) throw bad(`unknown key ${JSON.stringify(extra)}`);
  const preset = raw['preset'] ?? 'gpt2';
  if (typeof preset !== 'string') throw bad('preset must be a string');
  const overrides: Partial<Record<(typeof DIMS)[number], number>> = {};
  for (const d of DIMS) {
    const v = optInt(raw, d, 1);
    if (v !== undefined) overrides[d] = v;
  }
  if (overrides.vocab !== undefined && overrides.paddedVocab === undefined)
    overrides.paddedVocab = Math.max(overrides.vocab, GPT_PRESETS[preset]?.paddedVocab ?? 0);
  const arch = gptConfig(preset, overrides);
  const precision = raw['precision'] ?? 'bf16';
  if (typeof precision !== 'string' || !(PRECISIONS as readonly string[]).includes(precision))
    throw bad(`precision must be one of ${PRECISIONS.join(', ')}`);
  const tokenizer = raw['tokenizer'] ?? defaultCodec(arch.vocab);
  if (tokenizer !== 'gpt2' && tokenizer !== 'bytes' && tokenizer !== 'none')
    throw bad('tokenizer must be gpt2, bytes or none');
  const gen = section(raw, 'generation', [
    'maxSequences',
    'maxLength',
    'maxCacheMiB',
    'maxWaiting',
    'prefillTokensPerStep',
  ]);
  const mib = gen['maxCacheMiB'];
  if (mib !== undefined && (typeof mib !== 'number' || !(mib > 0)))
    throw bad('generation.maxCacheMiB must be > 0');
  return {
    arch,
    precision: precision as Precision,
    seed: optInt(raw, 'seed', 0) ?? 1,
    topK: optInt(raw, 'topK', 1, 1024) ?? 5,
    tokenizer,
    scoring: parseScoring(section(raw, 'scoring', ['planRows', 'planMiB', 'bucketed', 'planCopies'])),
    generation: {
      maxSequences: optInt(gen, 'maxSequences', 1, 4096) ?? 64,
      maxLength: optInt(gen, 'maxLength', 2, arch.context) ?? arch.context,
      maxCacheBytes: mib === undefined ? undefined : Math.floor((mib as number) * 2 ** 20),
      maxWaiting: optInt(gen, 'maxWaiting', 1),
      prefillTokensPerStep: optInt(gen, 'prefillTokensPerStep', 1),
    },
  };
}

/** A nested object of the config (absent: empty), refusing keys it does not know. */
function section(
  raw: Readonly<Record<string, unknown>>,
  name: string,
  keys: readonly string[],
): Readonly<Record<string, unknown>> {
  const v = raw[name] ?? {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(`${name} must be an object`);
  const o = v as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => !keys.includes(k));
  if (extra !== undefined) throw bad(`unknown ${name} key ${JSON.stringify(extra)}`);
  return o;
}

function parseScoring(o: Readonly<Record<string, unknown>>): Partial<ScorePlanLimits> {
  const rows = optInt(o, 'planRows', 0, MAX_PLAN_ROWS, 'scoring.');
  const mib = optInt(o, 'planMiB', 1, MAX_PLAN_MIB, 'scoring.');
  const copies = optInt(o, 'planCopies', 1, 4, 'scoring.');
  const bucketed = o['bucketed'];
  if (bucketed !== undefined && typeof bucketed !== 'boolean')
    throw bad('scoring.bucketed must be a boolean');
  return {
    ...(rows === undefined ? {} : { maxRows: rows }),
    ...(mib === undefined ? {} : { maxBytes: mib * 2 ** 20 }),
    ...(copies === undefined ? {} : { copies }),
    ...(bucketed === undefined ? {} : { bucketed }),
  };
}
