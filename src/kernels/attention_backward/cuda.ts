/**
 * attention_backward on CUDA, FlashAttention-2 style in three launches: delta = rowsum(dy ⊙ y) into
 * scratch, then dk/dv per key tile and dq per query tile (a separate pass instead of atomics: every
 * element of dqkv is written exactly once, and the result does not depend on scheduling). Tensor cores
 * (cuda-mma-dkdv-dq.ts) for f16/bf16 with head dims they tile, CUDA cores (cuda-generic.ts) otherwise.
 */
import type { CudaArg, CudaKernelContext, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { type AttentionPath, mmaPathVersion } from '../attention/cuda.js';
import { DELTA, GENERIC_DKDV, GENERIC_DQ } from '../attention/cuda-generic.js';
import { MMA_DKDV, MMA_DQ } from './cuda-mma-dkdv-dq.js';
import { MMA_BWD_SINGLE_PASS } from './cuda-mma-bwd.js';
import { MMA_BWD_HALVES } from './cuda-mma-bwd-halves.js';
import {
  L,
  asScalars,
  genericProgram,
  genericRows,
  launchOf,
  mmaEligible,
  MMA_TILE,
  mmaProgram,
  withMmaV1,
} from '../attention/cuda-plan.js';

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
    { kind: 'i32', value: L(s).headDim },
  ],
};

const genericParams: CudaProgram['params'] = (_a, s) => [
  { kind: 'ptr', arg: 0 },
  { kind: 'ptr', arg: 1 },
  { kind: 'ptr', arg: 3 },
  { kind: 'addr', value: L(s).delta },
  { kind: 'ptr', arg: 4 },
  { kind: 'i32', value: L(s).seq },
  { kind: 'i32', value: L(s).heads },
  { kind: 'i32', value: L(s).headDim },
  { kind: 'f64', value: L(s).scale },
];

const genericGrid: CudaProgram['grid'] = (_a, s) => [
  L(s).batch * L(s).heads,
  Math.ceil(L(s).seq / genericRows(L(s))),
  1,
];

export const ATTENTION_DKDV_GENERIC: CudaProgram = {
  ...genericProgram(GENERIC_DKDV, 'tdm_attn_dkdv', 1, 3),
  grid: genericGrid,
  params: genericParams,
};

export const ATTENTION_DQ_GENERIC: CudaProgram = {
  ...genericProgram(GENERIC_DQ, 'tdm_attn_dq', 1, 3),
  grid: genericGrid,
  params: genericParams,
};

const mmaParams: CudaProgram['params'] = (_a, s) => [
  { kind: 'ptr', arg: 0 },
  { kind: 'ptr', arg: 1 },
  { kind: 'ptr', arg: 3 },
  { kind: 'addr', value: L(s).delta },
  { kind: 'ptr', arg: 4 },
  { kind: 'i32', value: L(s).seq },
  { kind: 'i32', value: L(s).heads },
  { kind: 'f32', value: L(s).scale },
  { kind: 'f32', value: L(s).scale * Math.LOG2E },
];

/**
 * dkdv's and dq's compile-time tuning: ATTN_FAST (below) and the blocks an SM must hold (launch bounds:
 * registers capped to fit): dq 4 by default — on an H100 the cap (128 registers, ~140 bytes spilled)
 * took 0.14 ms off fwd+bwd at B=64 in the same call, where dkdv at 3 (168, 88 bytes spilled) added
 * 0.08. TANDEM_ATTN_DKDV_BLOCKS / _DQ_BLOCKS override (1: no cap).
 */
function withBackwardTuning(
  p: ReturnType<typeof mmaProgram>,
  env: string,
  fallback: number,
): ReturnType<typeof mmaProgram> {
  const asked = Number(process.env[env] ?? fallback);
  const blocks = Number.isInteger(asked) && asked >= 1 && asked <= 8 ? asked : fallback;
  // ATTN_FAST (TANDEM_ATTN_FAST=0 turns it off): ex2.approx, paired statistics loads, dkdv's mask on its
  // edge tiles only — on an H100 fwd+bwd at B=64 took 0.09-0.12 ms less in each of 4 same-call pairs.
  const extra: Record<string, number> = {};
  if (process.env['TANDEM_ATTN_FAST'] !== '0') extra['ATTN_FAST'] = 1;
  if (blocks > 1) extra['MIN_BLOCKS'] = blocks;
  if (Object.keys(extra).length === 0) return p;
  const defines = p.defines;
  return { ...p, defines: (a, s) => ({ ...defines?.(a, s), ...extra }) };
}

export const ATTENTION_DKDV_MMA: CudaProgram = {
  ...withBackwardTuning(mmaProgram(MMA_DKDV, 'tdm_attn_dkdv_mma', 1), 'TANDEM_ATTN_DKDV_BLOCKS', 1),
  params: mmaParams,
};
export const ATTENTION_DQ_MMA: CudaProgram = {
  ...withBackwardTuning(mmaProgram(MMA_DQ, 'tdm_attn_dq_mma', 1), 'TANDEM_ATTN_DQ_BLOCKS', 4),
  params: mmaParams,
};

/** delta for the tensor-core paths (v0, v1, v5): 16-byte loads, the dkdv/dq grid. args: dy 0, y 2. */
export const ATTENTION_DELTA_MMA: CudaProgram = {
  ...mmaProgram(MMA_DKDV, 'tdm_attn_delta_mma', 1),
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 2 },
    { kind: 'addr', value: L(s).delta },
    { kind: 'i32', value: L(s).seq },
    { kind: 'i32', value: L(s).heads },
  ],
};

export const ATTENTION_DKDV_MMA_V1: CudaProgram = withMmaV1(ATTENTION_DKDV_MMA);
export const ATTENTION_DQ_MMA_V1: CudaProgram = withMmaV1(ATTENTION_DQ_MMA);

/**
 * The single pass's shared memory: 5 tiles of 64 rows × (d + 8) 16-bit values and dSᵀ's 64 × 72
 * (55,296 bytes at d = 64).
 */
const singlePassShared = (d: number): number => (5 * MMA_TILE * (d + 8) + MMA_TILE * (MMA_TILE + 8)) * 2;

/** Single pass (v2), launch 1 of 3: delta and the zeroed dQ accumulator. args: dy 0, y 2. */
export const ATTENTION_BWD_PREP_V2: CudaProgram = {
  ...withMmaV1(mmaProgram(MMA_BWD_SINGLE_PASS, 'tdm_attn_bwd_prep', 1)),
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 2 },
    { kind: 'addr', value: L(s).delta },
    { kind: 'addr', value: L(s).dqAcc ?? 0 },
    { kind: 'i32', value: L(s).seq },
    { kind: 'i32', value: L(s).heads },
  ],
};

/** Single pass (v2), launch 2 of 3: dK, dV and the dQ accumulation, per 64-key block. */
export const ATTENTION_BWD_MMA_V2: CudaProgram = {
  ...withMmaV1(mmaProgram(MMA_BWD_SINGLE_PASS, 'tdm_attn_bwd_mma', 1)),
  sharedBytes: (_a, s) => singlePassShared(L(s).headDim),
  maxDynamicSharedBytes: singlePassShared(64),
  params: (a, s) => [...mmaParams(a, s), { kind: 'addr', value: L(s).dqAcc ?? 0 }],
};

/**
 * The single pass in halves (v4): K and V kept in shared memory too — 6 tiles of 64 rows × (d + 8) and
 * dSᵀ's 64 × 72 (64,512 bytes at d = 64); the same prep and convert launches around it.
 */
const halvesShared = (d: number): number => (6 * MMA_TILE * (d + 8) + MMA_TILE * (MMA_TILE + 8)) * 2;

export const ATTENTION_BWD_MMA_V4: CudaProgram = {
  ...ATTENTION_BWD_MMA_V2,
  ...withMmaV1(mmaProgram(MMA_BWD_HALVES, 'tdm_attn_bwd_mma', 1)),
  sharedBytes: (_a, s) => halvesShared(L(s).headDim),
  maxDynamicSharedBytes: halvesShared(64),
};

/** Single pass (v2), launch 3 of 3: scale · dQ into dqkv's q columns (the main kernel's parameters). */
export const ATTENTION_DQ_CONVERT_V2: CudaProgram = {
  ...withMmaV1(mmaProgram(MMA_BWD_SINGLE_PASS, 'tdm_attn_dq_convert', 1)),
  params: ATTENTION_BWD_MMA_V2.params,
};

function run(path: AttentionPath, ctx: CudaKernelContext, args: readonly CudaArg[], scalars: Scalars): void {
  const base = launchOf('attention_backward', args[1]!, scalars);
  if (base.batch === 0 || base.seq === 0) return;
  const eligible = mmaEligible(
    args[1]!.desc.dtype,
    base,
    args.map((a) => a.ptr),
  );
  const version = mmaPathVersion(path, eligible, base, 'attention_backward', ctx.arch);
  const rows = base.batch * base.heads * base.seq;
  const delta = ctx.scratch(rows * (base.f64 ? 8 : 4));
  const mma = path !== 'generic' && eligible;
  if (mma && (version === 'v2' || version === 'v3' || version === 'v4')) {
    // dQ accumulated in f32 [B, T, C] (rows · d values), zeroed by the prep launch.
    const dqAcc = ctx.scratch(rows * base.headDim * 4);
    const launch = asScalars({ ...base, delta, dqAcc });
    ctx.launch(ATTENTION_BWD_PREP_V2, args, launch);
    ctx.launch(version === 'v4' ? ATTENTION_BWD_MMA_V4 : ATTENTION_BWD_MMA_V2, args, launch);
    ctx.launch(ATTENTION_DQ_CONVERT_V2, args, launch);
    return;
  }
  const launch = asScalars({ ...base, delta });
  ctx.launch(mma ? ATTENTION_DELTA_MMA : ATTENTION_DELTA, args, launch);
  // v5 keeps v0's backward (with the FA2-style forward); v1 brings its own ldmatrix/ex2 variants.
  const v1 = version !== 'v0' && version !== 'v5';
  const dkdv = v1 ? ATTENTION_DKDV_MMA_V1 : ATTENTION_DKDV_MMA;
  const dq = v1 ? ATTENTION_DQ_MMA_V1 : ATTENTION_DQ_MMA;
  ctx.launch(mma ? dkdv : ATTENTION_DKDV_GENERIC, args, launch);
  ctx.launch(mma ? dq : ATTENTION_DQ_GENERIC, args, launch);
}

/** One path forced (GPU tests compare each against the reference); `attentionBackwardCuda` picks. */
export function attentionBackwardCudaPath(path: AttentionPath): CudaNative {
  return { kind: 'native', run: (ctx, args, scalars) => run(path, ctx, args, scalars) };
}

export const attentionBackwardCuda: CudaNative = attentionBackwardCudaPath('auto');
