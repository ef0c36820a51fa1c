/**
 * Small input checks shared by the workload parameter validators. Every failure is a TandemError with
 * code TANDEM_ERR_INVALID_ARGUMENT that names the field, so the service and CLI can show it unchanged.
 */
import { TandemError } from '../core/errors.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** At most this many characters of an offending value are shown in a message. */
const SHOWN_CHARS = 80;

/**
 * A short preview of a value for an error message: at most 3 levels and 4 entries per level, cut to
 * SHOWN_CHARS. Never JSON.stringify of the whole value: a value nested 20,000 deep overflowed the stack
 * there (a 500 instead of this 400), and a large one would be echoed back whole.
 */
export function preview(value: unknown, depth = 0): string {
  if (typeof value === 'string') {
    const s = JSON.stringify(value.length > SHOWN_CHARS ? `${value.slice(0, SHOWN_CHARS)}…` : value);
    return s;
  }
  if (typeof value !== 'object' || value === null) return String(value);
  if (depth >= 3) return Array.isArray(value) ? '[…]' : '{…}';
  const parts: string[] = [];
  let n = 0;
  if (Array.isArray(value)) {
    for (const v of value as unknown[]) {
      if (n++ === 4) {
        parts.push('…');
        break;
      }
      parts.push(preview(v, depth + 1));
    }
  } else {
    for (const k in value) {
      if (!Object.hasOwn(value, k)) continue;
      if (n++ === 4) {
        parts.push('…');
        break;
      }
      parts.push(
        `${JSON.stringify(k.slice(0, 32))}:${preview((value as Record<string, unknown>)[k], depth + 1)}`,
      );
    }
  }
  const s = Array.isArray(value) ? `[${parts.join(',')}]` : `{${parts.join(',')}}`;
  return depth === 0 && s.length > SHOWN_CHARS ? `${s.slice(0, SHOWN_CHARS)}…` : s;
}

export function invalid(field: string, message: string, value?: unknown): TandemError {
  const shown = preview(value);
  return new TandemError(
    'TANDEM_ERR_INVALID_ARGUMENT',
    `${field} ${message}${value === undefined ? '' : `, got ${shown}`}`,
    {
      field,
    },
  );
}

export function asRecord(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(field, 'must be an object', value);
  }
  return value as Record<string, unknown>;
}

export interface NumberRule {
  /** Exclusive lower bound. */
  gt?: number;
  /** Inclusive lower bound. */
  ge?: number;
  /** Inclusive upper bound. */
  le?: number;
  /** Exclusive upper bound. */
  lt?: number;
  integer?: boolean;
}

export function num(
  obj: Record<string, unknown>,
  key: string,
  fallback: number | undefined,
  rule: NumberRule,
  prefix = '',
): number {
  const field = prefix + key;
  const raw = obj[key];
  if (raw === undefined) {
    if (fallback === undefined) throw invalid(field, 'is required');
    return fallback;
  }
  if (typeof raw !== 'number' || !Number.isFinite(raw)) throw invalid(field, 'must be a finite number', raw);
  if (rule.integer && !Number.isInteger(raw)) throw invalid(field, 'must be an integer', raw);
  if (rule.gt !== undefined && !(raw > rule.gt)) throw invalid(field, `must be > ${rule.gt}`, raw);
  if (rule.ge !== undefined && !(raw >= rule.ge)) throw invalid(field, `must be >= ${rule.ge}`, raw);
  if (rule.le !== undefined && !(raw <= rule.le)) throw invalid(field, `must be <= ${rule.le}`, raw);
  if (rule.lt !== undefined && !(raw < rule.lt)) throw invalid(field, `must be < ${rule.lt}`, raw);
  return raw;
}

export function bool(obj: Record<string, unknown>, key: string, fallback: boolean, prefix = ''): boolean {
  const raw = obj[key];
  if (raw === undefined) return fallback;
  if (typeof raw !== 'boolean') throw invalid(prefix + key, 'must be a boolean', raw);
  return raw;
}

export function oneOf<T extends string>(
  obj: Record<string, unknown>,
  key: string,
  choices: readonly T[],
  fallback: T | undefined,
  prefix = '',
): T {
  const raw = obj[key];
  if (raw === undefined) {
    if (fallback === undefined) throw invalid(prefix + key, `is required (one of ${choices.join(', ')})`);
    return fallback;
  }
  if (typeof raw !== 'string' || !(choices as readonly string[]).includes(raw)) {
    throw invalid(prefix + key, `must be one of ${choices.join(', ')}`, raw);
  }
  return raw as T;
}

/** Rejects keys the validator does not know, so a typo ("temprature") is an error, not a silent default. */
export function noExtraKeys(obj: Record<string, unknown>, known: readonly string[], where: string): void {
  // for-in over own keys (the same keys in the same order as Object.keys) makes no array per call.
  for (const k in obj) {
    if (Object.hasOwn(obj, k) && !known.includes(k))
      throw invalid(`${where}.${k}`, `is not a known parameter (known: ${known.join(', ')})`);
  }
}

/**
 * A parameter described once: the validators read it (`numberField` + `num` ...) and `paramsSchema`
 * turns the same descriptions into the JSON Schema the service publishes (GET /v1/job-types), so the
 * dashboard's forms and the checks cannot drift apart.
 */
export type FieldSpec =
  | {
      readonly kind: 'number';
      readonly rule: NumberRule;
      readonly default?: number | undefined;
      readonly description: string;
    }
  | { readonly kind: 'boolean'; readonly default?: boolean | undefined; readonly description: string }
  | {
      readonly kind: 'enum';
      readonly choices: readonly string[];
      readonly default?: string | undefined;
      readonly description: string;
    }
  /** Checked by hand-written code; `schema` says the shape. */
  | {
      readonly kind: 'schema';
      readonly schema: Readonly<Record<string, unknown>>;
      readonly description: string;
    };

export type NumberField = Extract<FieldSpec, { kind: 'number' }>;

export const numberField = (rule: NumberRule, fallback: number | undefined, description: string) =>
  ({ kind: 'number', rule, default: fallback, description }) as const;
export const boolField = <D extends boolean | undefined>(fallback: D, description: string) =>
  ({ kind: 'boolean', default: fallback, description }) as const;
export const enumField = <T extends string>(
  choices: readonly T[],
  fallback: T | undefined,
  description: string,
) => ({ kind: 'enum', choices, default: fallback, description }) as const;

/** `num` on a described field: its default and its rule. */
export function numOf(obj: Record<string, unknown>, key: string, f: NumberField, prefix = ''): number {
  return num(obj, key, f.default, f.rule, prefix);
}

/** JSON Schema of a number rule (bounds as JSON Schema keywords). */
export function numberSchema(rule: NumberRule): Record<string, unknown> {
  return {
    type: rule.integer ? 'integer' : 'number',
    ...(rule.gt !== undefined ? { exclusiveMinimum: rule.gt } : {}),
    ...(rule.ge !== undefined ? { minimum: rule.ge } : {}),
    ...(rule.le !== undefined ? { maximum: rule.le } : {}),
    ...(rule.lt !== undefined ? { exclusiveMaximum: rule.lt } : {}),
  };
}

export function fieldSchema(f: FieldSpec): Record<string, unknown> {
  const base =
    f.kind === 'number'
      ? numberSchema(f.rule)
      : f.kind === 'boolean'
        ? { type: 'boolean' }
        : f.kind === 'enum'
          ? { type: 'string', enum: [...f.choices] }
          : { ...f.schema };
  const fallback = 'default' in f ? f.default : undefined;
  return { ...base, description: f.description, ...(fallback !== undefined ? { default: fallback } : {}) };
}

/** The JSON Schema of an object of described fields; unknown keys are refused, as `noExtraKeys` does. */
export function paramsSchema(
  fields: Readonly<Record<string, FieldSpec>>,
  extra: { required?: readonly string[]; examples?: readonly unknown[]; description?: string } = {},
): Record<string, unknown> {
  return {
    type: 'object',
    additionalProperties: false,
    ...(extra.description ? { description: extra.description } : {}),
    ...(extra.required?.length ? { required: [...extra.required] } : {}),
    properties: Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, fieldSchema(f)])),
    ...(extra.examples ? { examples: [...extra.examples] } : {}),
  };
}
