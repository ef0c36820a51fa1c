/**
 * Shapes shared by the KV-cache ops (docs/deep-learning-ops.md, "kvcache group"): one validation used by
 * the defs on the main thread and by the kernels, so both agree on the sizes.
 *
 * Layout: a cache is [S, P, C] (S sequence slots, P positions each, C = H·d model width) in the model's
 * dtype; the per-row tensors `slot` and `pos` (i32 [M]) say which slot and position each row of a
 * [M, 3C] q|k|v projection belongs to, so one launch mixes rows of many sequences at different lengths
 * (prefill rows of one sequence, or one decode row per sequence: vLLM's ragged batch).
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { intScalar, numberScalar } from '../common/scalars.js';
import { requireFloat, requireRank } from '../common/validate.js';

export interface KvDims {
  /** Rows of the projection (tokens in the launch). */
  readonly rows: number;
  readonly width: number;
  readonly slots: number;
  readonly positions: number;
}

export function expectShape(op: string, name: string, desc: TensorDesc, want: readonly number[]): void {
  if (desc.shape.length !== want.length || desc.shape.some((s, i) => s !== want[i]))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must be ${shapeStr(want)}, got ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape, expected: want },
    );
}

export function expectDType(op: string, name: string, desc: TensorDesc, want: DType): void {
  if (desc.dtype !== want)
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: ${name} must be ${want}, got ${desc.dtype}`, {
      op,
      arg: name,
      dtype: desc.dtype,
    });
}

/** An i32 [rows] index vector (ids, pos, slot, index). */
export function requireIndexVector(op: string, name: string, desc: TensorDesc, rows?: number): number {
  expectDType(op, name, desc, 'i32');
  requireRank(op, name, desc, 1);
  if (rows !== undefined) expectShape(op, name, desc, [rows]);
  return desc.shape[0]!;
}

/** qkv [M, 3C], slot/pos i32 [M], kcache/vcache [S, P, C] in qkv's dtype. */
export function kvDims(op: string, a: Readonly<Record<string, TensorDesc>>): KvDims {
  const qkv = a['qkv']!;
  requireFloat(op, 'qkv', qkv);
  requireRank(op, 'qkv', qkv, 2);
  const [rows, packed] = qkv.shape as [number, number];
  if (packed % 3 !== 0 || packed === 0)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: qkv ${shapeStr(qkv.shape)} must be [M, 3C] with C ≥ 1`,
      { op, qkv: qkv.shape },
    );
  const width = packed / 3;
  requireIndexVector(op, 'slot', a['slot']!, rows);
  requireIndexVector(op, 'pos', a['pos']!, rows);
  const k = a['kcache']!;
  expectDType(op, 'kcache', k, qkv.dtype);
  requireRank(op, 'kcache', k, 3);
  const [slots, positions] = k.shape as [number, number, number];
  expectShape(op, 'kcache', k, [slots, positions, width]);
  expectDType(op, 'vcache', a['vcache']!, qkv.dtype);
  expectShape(op, 'vcache', a['vcache']!, k.shape);
  return { rows, width, slots, positions };
}

export const KV_ATTENTION_SCALARS = ['heads', 'scale'] as const;

/** heads (required, divides C) and scale (default 1/√d). */
export function kvHeads(
  op: string,
  width: number,
  scalars: Scalars,
): { heads: number; headDim: number; scale: number } {
  const heads = intScalar(op, scalars, 'heads');
  if (heads < 1)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "heads" must be ≥ 1, got ${heads}`, {
      op,
      scalar: 'heads',
    });
  if (width % heads !== 0)
    throw new TandemError('TANDEM_ERR_SHAPE', `${op}: C = ${width} is not a multiple of heads = ${heads}`, {
      op,
      heads,
    });
  const headDim = width / heads;
  return { heads, headDim, scale: numberScalar(op, scalars, 'scale', 1 / Math.sqrt(headDim)) };
}
