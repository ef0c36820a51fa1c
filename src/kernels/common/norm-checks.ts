/**
 * Validation and scalar parsing shared by the norm group (layernorm, embedding, softmax_xent, dropout
 * and their backward ops). Definitions (main thread) and CPU kernels (workers) read scalars through the
 * same functions, so a kernel never disagrees with the definition that accepted the call.
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { type Shape, numel, sameShape, shapeStr } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { boolScalar, intScalar, numberScalar } from './scalars.js';
import { type ArgDescs, requireFloat } from './validate.js';

/** Statistics (mean, rstd, lse, losses) are f32, or f64 when the op runs in f64. */
export function statDType(dtype: DType): 'f32' | 'f64' {
  return dtype === 'f64' ? 'f64' : 'f32';
}

export function requireDType(op: string, name: string, desc: TensorDesc, dtype: DType): void {
  if (desc.dtype !== dtype) {
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: ${name} must be ${dtype}, got ${desc.dtype}`, {
      op,
      arg: name,
      dtype: desc.dtype,
    });
  }
}

export function requireShape(op: string, name: string, desc: TensorDesc, shape: Shape): void {
  if (!sameShape(desc.shape, shape)) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must have shape ${shapeStr(shape)}, got ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape, expected: shape },
    );
  }
}

/** A float tensor of rank >= 2 seen as [rows, C] over its last axis (C >= 1). */
export function rowsOf(op: string, name: string, desc: TensorDesc): { rows: number; cols: number } {
  requireFloat(op, name, desc);
  if (desc.shape.length < 2 || desc.shape[desc.shape.length - 1]! < 1) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must have rank >= 2 and a non-empty last axis, got ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape },
    );
  }
  const cols = desc.shape[desc.shape.length - 1]!;
  return { rows: numel(desc.shape) / cols, cols };
}

/** `names` all share `first`'s dtype and shape. */
export function requireLike(op: string, first: string, names: readonly string[], args: ArgDescs): void {
  const f = args[first]!;
  for (const n of names) {
    requireDType(op, n, args[n]!, f.dtype);
    requireShape(op, n, args[n]!, f.shape);
  }
}

/** The affine parameters w and b: [C] in x's dtype. */
export function requireAffine(op: string, x: TensorDesc, cols: number, args: ArgDescs): void {
  for (const n of ['w', 'b']) {
    if (args[n] === undefined) continue;
    requireDType(op, n, args[n], x.dtype);
    requireShape(op, n, args[n], [cols]);
  }
}

/** Per-row statistics: shape of x without its last axis, in statDType(x). */
export function requireStats(op: string, names: readonly string[], x: TensorDesc, args: ArgDescs): void {
  for (const n of names) {
    requireDType(op, n, args[n]!, statDType(x.dtype));
    requireShape(op, n, args[n]!, x.shape.slice(0, -1));
  }
}

export function epsScalar(op: string, scalars: Scalars): number {
  const eps = numberScalar(op, scalars, 'eps', 1e-5);
  if (eps < 0) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: eps must be >= 0, got ${eps}`, { op });
  }
  return eps;
}

export function accumulateScalar(op: string, scalars: Scalars, name = 'accumulate'): boolean {
  return boolScalar(op, scalars, name, false);
}

export interface DropoutParams {
  /** Drop probability in [0, 1). */
  readonly p: number;
  readonly seed: number;
  readonly offset: number;
  /** An element is kept when the 23-bit word m = philox >>> 9 satisfies m >= threshold. */
  readonly threshold: number;
  readonly scale: number;
}

/**
 * Dropout's scalars. keep ⇔ u ≥ p with u = (2m + 1)·2⁻²⁴, m = word >>> 9 (the uniform of
 * mc_common/philox.ts); as integers that is m ≥ ceil((p·2²⁴ − 1)/2), computed here once in f64 so every
 * backend compares the same integers and drops exactly the same elements.
 */
export function dropoutParams(op: string, scalars: Scalars): DropoutParams {
  const p = numberScalar(op, scalars, 'p');
  if (!(p >= 0 && p < 1)) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: p must be in [0, 1), got ${p}`, { op });
  }
  const seed = intScalar(op, scalars, 'seed');
  const offset = intScalar(op, scalars, 'offset', 0);
  for (const [name, v] of [
    ['seed', seed],
    ['offset', offset],
  ] as const) {
    if (v < 0 || v >= 2 ** 53) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: ${name} must be in [0, 2^53), got ${v}`, {
        op,
      });
    }
  }
  const threshold = Math.max(0, Math.ceil((p * 2 ** 24 - 1) / 2));
  return { p, seed, offset, threshold, scale: 1 / (1 - p) };
}

/** embedding's shapes: ids i32 [B, T], tables [V, C] and [P, C] (P ≥ T), activations [B, T, C] or [B·T, C]. */
export function embeddingShapes(
  op: string,
  args: ArgDescs,
  act: string,
  wte: string,
  wpe: string,
): { batch: number; steps: number; vocab: number; cols: number; positions: number } {
  const ids = args.ids!;
  requireDType(op, 'ids', ids, 'i32');
  if (ids.shape.length !== 2) {
    throw new TandemError('TANDEM_ERR_SHAPE', `${op}: ids must be [B, T], got ${shapeStr(ids.shape)}`, {
      op,
      shape: ids.shape,
    });
  }
  const [batch, steps] = ids.shape as [number, number];
  const { cols } = rowsOf(op, wte, args[wte]!);
  requireRank2(op, wte, args[wte]!);
  requireRank2(op, wpe, args[wpe]!);
  requireDType(op, wpe, args[wpe]!, args[wte]!.dtype);
  requireDType(op, act, args[act]!, args[wte]!.dtype);
  const [vocab] = args[wte]!.shape as [number, number];
  const positions = args[wpe]!.shape[0]!;
  if (args[wpe]!.shape[1] !== cols || positions < steps) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${wpe} must be [P, ${cols}] with P >= T = ${steps}, got ${shapeStr(args[wpe]!.shape)}`,
      { op, shape: args[wpe]!.shape },
    );
  }
  // Activations [B, T, C], or [B·T, C]: the rows the next layer reads, with no reshape copy.
  const a = args[act]!;
  requireShape(op, act, a, a.shape.length === 2 ? [batch * steps, cols] : [batch, steps, cols]);
  return { batch, steps, vocab, cols, positions };
}

function requireRank2(op: string, name: string, desc: TensorDesc): void {
  if (desc.shape.length !== 2) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must be [rows, C], got ${shapeStr(desc.shape)}`,
      {
        op,
        arg: name,
        shape: desc.shape,
      },
    );
  }
}
