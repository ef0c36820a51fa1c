/** Argument checks shared by the op definitions; each throws a TandemError with a stable code. */
import { type DType, isFloat } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { sameShape, shapeStr } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { ArgSpec } from '../kernel.js';

export const FLOAT_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

export type ArgDescs = Readonly<Record<string, TensorDesc>>;

function declares(specs: readonly ArgSpec[], name: string): boolean {
  for (let i = 0; i < specs.length; i++) if (specs[i]!.name === name) return true;
  return false;
}

/** Every declared argument present, nothing undeclared. */
export function checkArgNames(op: string, specs: readonly ArgSpec[], args: ArgDescs): void {
  // Loops over the specs and the own keys rather than arrays of names: this runs for every submitted task.
  for (const { name } of specs) {
    if (args[name] === undefined) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: missing tensor argument "${name}"`, {
        op,
        arg: name,
      });
    }
  }
  for (const name in args) {
    if (Object.hasOwn(args, name) && !declares(specs, name)) {
      const names = specs.map((s) => s.name);
      const known = names.length > 0 ? names.join(', ') : 'none';
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `${op}: unknown tensor argument "${name}" (takes: ${known})`,
        {
          op,
          arg: name,
        },
      );
    }
  }
}

export function requireFloat(op: string, name: string, desc: TensorDesc): void {
  if (!isFloat(desc.dtype)) {
    throw new TandemError(
      'TANDEM_ERR_DTYPE',
      `${op}: ${name} must have a floating dtype (${FLOAT_DTYPES.join(', ')}), got ${desc.dtype}`,
      { op, arg: name, dtype: desc.dtype },
    );
  }
}

export function requireSameDType(op: string, names: readonly string[], args: ArgDescs): void {
  const first = args[names[0]!]!;
  for (const name of names.slice(1)) {
    const d = args[name]!;
    if (d.dtype !== first.dtype) {
      throw new TandemError(
        'TANDEM_ERR_DTYPE',
        `${op}: ${names[0]} and ${name} must have the same dtype, got ${first.dtype} and ${d.dtype}`,
        { op, dtypes: names.map((n) => args[n]!.dtype) },
      );
    }
  }
}

export function requireSameShape(op: string, names: readonly string[], args: ArgDescs): void {
  const first = args[names[0]!]!;
  for (const name of names.slice(1)) {
    const d = args[name]!;
    if (!sameShape(d.shape, first.shape)) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `${op}: ${names[0]} ${shapeStr(first.shape)} and ${name} ${shapeStr(d.shape)} must have the same shape`,
        { op, shapes: names.map((n) => args[n]!.shape) },
      );
    }
  }
}

export function requireRank(op: string, name: string, desc: TensorDesc, rank: number): void {
  if (desc.shape.length !== rank) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must have rank ${rank}, got shape ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape },
    );
  }
}
