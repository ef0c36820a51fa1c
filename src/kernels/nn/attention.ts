/** The attention ops of the deep-learning layer (issue 15); see docs/deep-learning-ops.md. */
import { type DType, epsilon } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { ConformanceCase } from '../case-types.js';
import { attentionCpu } from '../attention/cpu.js';
import { attentionCuda } from '../attention/cuda.js';
import { attentionDef } from '../attention/def.js';
import { lseDType } from '../attention/params.js';
import { attentionReference } from '../attention/reference.js';
import { attentionBackwardCpu } from '../attention_backward/cpu.js';
import { attentionBackwardCuda } from '../attention_backward/cuda.js';
import { attentionBackwardDef } from '../attention_backward/def.js';
import { attentionBackwardReference } from '../attention_backward/reference.js';
import type { OpGroup } from './op-group.js';

const DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

/** [B, T, H, d] (+ scalars): odd sequence lengths that are not multiples of any tile size. */
const SHAPES: readonly { shape: readonly [number, number, number, number]; scalars?: Scalars }[] = [
  { shape: [1, 1, 1, 8] },
  { shape: [2, 7, 2, 8] },
  { shape: [1, 33, 3, 16] },
  { shape: [1, 17, 2, 12] },
  { shape: [2, 65, 4, 32] },
  { shape: [1, 65, 1, 64], scalars: { scale: 0.3 } },
];

/**
 * Error model: the products sum T (or d) terms of magnitude ~1 in f32 (f64), then one rounding to the
 * storage dtype. For f16/bf16 a tensor-core kernel also rounds P (and dS) to the storage dtype before the
 * P·v (dS·k, dSᵀ·q, Pᵀ·dy) products, as FlashAttention does: about eps(dtype)·√T on sums of T terms.
 */
function tolerance(
  dtype: DType,
  seq: number,
  headDim: number,
  backward: boolean,
): { rtol: number; atol: number } {
  const work = dtype === 'f64' ? epsilon('f64') : epsilon('f32');
  const accumulate = 8 * (seq + headDim) * work * (backward ? 4 : 1);
  if (dtype === 'f32' || dtype === 'f64') return { rtol: 4 * epsilon(dtype), atol: accumulate };
  return {
    rtol: 2 * epsilon(dtype),
    atol: epsilon(dtype) * (backward ? 2 * Math.sqrt(seq) : 2) + accumulate,
  };
}

/**
 * The forward and backward case of one geometry; `rowsLayout` gives qkv as the rows of a linear layer
 * [B·T, 3C] with T as the scalar `seq` (how GPT calls it), otherwise [B, T, 3C].
 */
function casePair(
  dtype: DType,
  [B, T, H, hd]: readonly [number, number, number, number],
  extra: Scalars,
  rowsLayout: boolean,
): ConformanceCase[] {
  const C = H * hd;
  const s: Scalars = { heads: H, ...extra, ...(rowsLayout ? { seq: T } : {}) };
  const scale = extra['scale'] !== undefined ? ` scale ${String(extra['scale'])}` : '';
  const label = `${dtype}${rowsLayout ? ' rows' : ''} B${B} T${T} H${H} d${hd}${scale}`;
  const lead = rowsLayout ? [B * T] : [B, T];
  const packed = { shape: [...lead, 3 * C], dtype };
  const rows = { shape: [...lead, C], dtype };
  const lse = { shape: [B, H, T], dtype: lseDType(dtype) };
  return [
    {
      name: `attention ${label}`,
      op: 'attention',
      args: { qkv: packed, y: rows, lse },
      scalars: s,
      ...tolerance(dtype, T, hd, false),
    },
    {
      name: `attention_backward ${label}`,
      op: 'attention_backward',
      // lse is drawn like a real one (positive, around the row maximum); y and dy are any rows.
      args: { dy: rows, qkv: packed, y: rows, lse: { ...lse, range: 'positive' }, dqkv: packed },
      scalars: s,
      ...tolerance(dtype, T, hd, true),
    },
  ];
}

function cases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const { shape, scalars } of SHAPES) out.push(...casePair(dtype, shape, scalars ?? {}, false));
    out.push(...casePair(dtype, [2, 33, 2, 16], {}, true));
  }
  return out;
}

export const attentionGroup: OpGroup = {
  name: 'attention',
  defs: [attentionDef, attentionBackwardDef],
  impls: [
    { op: 'attention', backend: 'cpu', impl: attentionCpu },
    { op: 'attention_backward', backend: 'cpu', impl: attentionBackwardCpu },
    { op: 'attention', backend: 'cuda', impl: attentionCuda },
    { op: 'attention_backward', backend: 'cuda', impl: attentionBackwardCuda },
  ],
  references: { attention: attentionReference, attention_backward: attentionBackwardReference },
  cases,
};
