/**
 * Scalar parsing shared by validation (main thread) and the CPU kernels (worker threads): both read the
 * same defaults, so a kernel never disagrees with the definition that accepted the call.
 */
import { TandemError } from '../../core/errors.js';
import type { ScalarValue, Scalars } from '../../devices/device.js';

function describe(v: ScalarValue | undefined): string {
  return v === undefined ? 'nothing' : JSON.stringify(v);
}

/** Rejects scalar names the op does not know, so a typo ("tranA") is an error rather than a silent default. */
export function checkScalarNames(op: string, scalars: Scalars, allowed: readonly string[]): void {
  // for-in over own keys (the same keys in the same order as Object.keys): no array per submitted task.
  for (const name in scalars) {
    if (Object.hasOwn(scalars, name) && !allowed.includes(name)) {
      const known = allowed.length > 0 ? allowed.join(', ') : 'none';
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `${op}: unknown scalar "${name}" (known: ${known})`,
        {
          op,
          scalar: name,
        },
      );
    }
  }
}

export function numberScalar(op: string, scalars: Scalars, name: string, fallback?: number): number {
  const v = scalars[name];
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: scalar "${name}" must be a finite number, got ${describe(v)}`,
      { op, scalar: name },
    );
  }
  return v;
}

export function intScalar(op: string, scalars: Scalars, name: string, fallback?: number): number {
  const v = numberScalar(op, scalars, name, fallback);
  if (!Number.isInteger(v)) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: scalar "${name}" must be an integer, got ${v}`,
      {
        op,
        scalar: name,
      },
    );
  }
  return v;
}

export function boolScalar(op: string, scalars: Scalars, name: string, fallback: boolean): boolean {
  const v = scalars[name];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: scalar "${name}" must be a boolean, got ${describe(v)}`,
      {
        op,
        scalar: name,
      },
    );
  }
  return v;
}

export function enumScalar<T extends string>(
  op: string,
  scalars: Scalars,
  name: string,
  values: readonly T[],
  fallback?: T,
): T {
  const v = scalars[name];
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: scalar "${name}" must be one of ${values.join(', ')}, got ${describe(v)}`,
      { op, scalar: name },
    );
  }
  return v as T;
}
