/**
 * attention_backward on CUDA, FlashAttention-2 style in three launches: delta = rowsum(dy ⊙ y) into
 * scratch, then dk/dv per key tile and dq per query tile (a separate pass instead of atomics: every
 * element of dqkv is written exactly once, and the result does not depend on scheduling).
 */
import type { CudaArgDesc, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { DELTA, GENERIC_DKDV, GENERIC_DQ } from '../attention/cuda-generic.js';
import { L, asScalars, genericProgram, genericRows, launchOf } from '../attention/cuda-plan.js';

const WARPS_PER_BLOCK = 4;
const MAX_GRID = 1 << 16;

/** args: dy 0, qkv 1, y 2, lse 3, dqkv 4. */
export const ATTENTION_DELTA: CudaProgram = {
  ...genericProgram(DELTA, 'tdm_attn_delta', 1, 3),
  grid: (_a, s) => [
    Math.max(1, Math.min(MAX_GRID, Math.ceil((L(s).batch * L(s).seq * L(s).heads) / WARPS_PER_BLOCK))),
    1,
    1,
  ],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 2 },
    { kind: 'addr', value: L(s).delta },
    { kind: 'i32', value: L(s).batch },
    { kind: 'i32', value: L(s).seq },
    { kind: 'i32', value: L(s).heads },
  ],
};

const tileParams: CudaProgram['params'] = (_a, s) => [
  { kind: 'ptr', arg: 0 },
  { kind: 'ptr', arg: 1 },
  { kind: 'ptr', arg: 3 },
  { kind: 'addr', value: L(s).delta },
  { kind: 'ptr', arg: 4 },
  { kind: 'i32', value: L(s).seq },
  { kind: 'i32', value: L(s).heads },
  { kind: 'f64', value: L(s).scale },
];

const tileGrid: CudaProgram['grid'] = (_a, s) => [
  L(s).batch * L(s).heads,
  Math.ceil(L(s).seq / genericRows(L(s))),
  1,
];

export const ATTENTION_DKDV_GENERIC: CudaProgram = {
  ...genericProgram(GENERIC_DKDV, 'tdm_attn_dkdv', 1, 3),
  grid: tileGrid,
  params: tileParams,
};

export const ATTENTION_DQ_GENERIC: CudaProgram = {
  ...genericProgram(GENERIC_DQ, 'tdm_attn_dq', 1, 3),
  grid: tileGrid,
  params: tileParams,
};

export function deltaBytes(qkv: CudaArgDesc, rows: number): number {
  return rows * (qkv.desc.dtype === 'f64' ? 8 : 4);
}

export const attentionBackwardCuda: CudaNative = {
  kind: 'native',
  run(ctx, args, scalars) {
    const base = launchOf('attention_backward', args[1]!, scalars);
    if (base.batch === 0 || base.seq === 0) return;
    const rows = base.batch * base.heads * base.seq;
    const launch = asScalars({ ...base, delta: ctx.scratch(deltaBytes(args[1]!, rows)) });
    ctx.launch(ATTENTION_DELTA, args, launch);
    ctx.launch(ATTENTION_DKDV_GENERIC, args, launch);
    ctx.launch(ATTENTION_DQ_GENERIC, args, launch);
  },
};
