/**
 * Shapes and scalars shared by `attention` and `attention_backward` (causal multi-head self-attention in
 * GPT-2's packed layout, docs/deep-learning-ops.md): parsing and validation run the same code on the
 * main thread (validate) and in the kernels, so both agree on defaults.
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import { shapeStr } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { intScalar, numberScalar } from '../common/scalars.js';
import { requireFloat, requireRank } from '../common/validate.js';

export const ATTENTION_SCALARS = ['heads', 'scale', 'seq'] as const;

export interface AttentionDims {
  readonly batch: number;
  readonly seq: number;
  /** Model width C (qkv's last axis is 3C). */
  readonly width: number;
  readonly heads: number;
  /** Head dim d = C / H. */
  readonly headDim: number;
  readonly scale: number;
}

/** The dtype of `lse`: f32, or f64 when the op runs in f64. */
export function lseDType(dtype: DType): DType {
  return dtype === 'f64' ? 'f64' : 'f32';
}

/**
 * Reads heads/scale and the sizes from qkv's shape [B, T, 3C] — or [B·T, 3C] with the scalar `seq` = T
 * (the rows a linear layer wrote, used in place: no reshape copy); throws on a malformed qkv or heads.
 */
export function attentionDims(op: string, qkv: TensorDesc, scalars: Scalars): AttentionDims {
  requireFloat(op, 'qkv', qkv);
  let batch: number;
  let seq: number;
  let packed: number;
  if (qkv.shape.length === 2 && scalars['seq'] !== undefined) {
    const rows = qkv.shape[0]!;
    seq = intScalar(op, scalars, 'seq');
    if (seq < 1 || rows % seq !== 0)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `${op}: qkv ${shapeStr(qkv.shape)} has ${rows} rows, not a multiple of seq = ${seq}`,
        { op, qkv: qkv.shape, seq },
      );
    batch = rows / seq;
    packed = qkv.shape[1]!;
  } else {
    requireRank(op, 'qkv', qkv, 3);
    if (scalars['seq'] !== undefined && scalars['seq'] !== qkv.shape[1])
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `${op}: seq = ${String(scalars['seq'])} but qkv is ${shapeStr(qkv.shape)}`,
        {
          op,
        },
      );
    [batch, seq, packed] = qkv.shape as [number, number, number];
  }
  const heads = intScalar(op, scalars, 'heads');
  if (heads < 1) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "heads" must be ≥ 1, got ${heads}`, {
      op,
      scalar: 'heads',
    });
  }
  if (packed % 3 !== 0 || packed === 0) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: qkv ${shapeStr(qkv.shape)} must be [B, T, 3C] with C ≥ 1 (last axis a positive multiple of 3)`,
      { op, qkv: qkv.shape },
    );
  }
  const width = packed / 3;
  if (width % heads !== 0) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: C = ${width} (qkv ${shapeStr(qkv.shape)}) is not a multiple of heads = ${heads}`,
      { op, qkv: qkv.shape, heads },
    );
  }
  const headDim = width / heads;
  const scale = numberScalar(op, scalars, 'scale', 1 / Math.sqrt(headDim));
  return { batch, seq, width, heads, headDim, scale };
}

function expectShape(op: string, name: string, desc: TensorDesc, want: readonly number[]): void {
  if (desc.shape.length !== want.length || desc.shape.some((s, i) => s !== want[i])) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: ${name} must be ${shapeStr(want)}, got ${shapeStr(desc.shape)}`,
      { op, arg: name, shape: desc.shape, expected: want },
    );
  }
}

function expectDType(op: string, name: string, desc: TensorDesc, want: DType, why: string): void {
  if (desc.dtype !== want) {
    throw new TandemError('TANDEM_ERR_DTYPE', `${op}: ${name} must be ${want} (${why}), got ${desc.dtype}`, {
      op,
      arg: name,
      dtype: desc.dtype,
    });
  }
}

/** A [B, T, C] tensor in qkv's dtype (y, dy). */
export function requireRows(
  op: string,
  name: string,
  desc: TensorDesc,
  qkv: TensorDesc,
  d: AttentionDims,
): void {
  expectDType(op, name, desc, qkv.dtype, "qkv's dtype");
  // Rows like qkv's: [B, T, C], or [B·T, C] when qkv is given as rows.
  expectShape(
    op,
    name,
    desc,
    qkv.shape.length === 2 ? [d.batch * d.seq, d.width] : [d.batch, d.seq, d.width],
  );
}

/** lse [B, H, T], f32 (f64 when qkv is f64). */
export function requireLse(op: string, desc: TensorDesc, qkv: TensorDesc, d: AttentionDims): void {
  expectDType(op, 'lse', desc, lseDType(qkv.dtype), 'statistics are f32, f64 for f64 qkv');
  expectShape(op, 'lse', desc, [d.batch, d.heads, d.seq]);
}

/** A [B, T, 3C] tensor in qkv's dtype (dqkv). */
export function requirePacked(op: string, name: string, desc: TensorDesc, qkv: TensorDesc): void {
  expectDType(op, name, desc, qkv.dtype, "qkv's dtype");
  expectShape(op, name, desc, qkv.shape);
}

/** Causal score pairs (s ≤ t) per head: T(T+1)/2. */
export function causalPairs(seq: number): number {
  return (seq * (seq + 1)) / 2;
}
