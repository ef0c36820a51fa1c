/**
 * What the attention CUDA launches need, carried to the constant programs through the scalars of
 * ctx.launch (the program cache is keyed by program identity, so per-call values cannot live in closures).
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import type { CudaArgDesc, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { type AttentionDims, attentionDims } from './params.js';

export interface AttentionLaunch {
  readonly batch: number;
  readonly seq: number;
  readonly heads: number;
  readonly headDim: number;
  readonly scale: number;
  /** 1 for f64 (smaller tiles, double arithmetic). */
  readonly f64: number;
  /** Device address of the f32 (f64) delta = rowsum(dy ⊙ y) scratch, [B, H, T]; 0 in the forward. */
  readonly delta: number;
  /** Device address of the single-pass backward's f32 dQ accumulator [B, T, C] (0 otherwise). */
  readonly dqAcc?: number;
}

export const L = (s: Scalars): AttentionLaunch => s as unknown as AttentionLaunch;

export function launchOf(op: string, qkv: CudaArgDesc, scalars: Scalars, delta = 0): AttentionLaunch {
  const d: AttentionDims = attentionDims(op, qkv.desc, scalars);
  return {
    batch: d.batch,
    seq: d.seq,
    heads: d.heads,
    headDim: d.headDim,
    scale: d.scale,
    f64: qkv.desc.dtype === 'f64' ? 1 : 0,
    delta,
  };
}

export const asScalars = (l: AttentionLaunch): Scalars => l as unknown as Scalars;

/** Rows per block of the CUDA-core kernels (WARPS · ROWS in cuda-generic.ts). */
export function genericRows(l: AttentionLaunch): number {
  return l.f64 ? 4 : 8;
}

export const BLOCK_128 = [128, 1, 1] as const;

/** Shared fields of the CUDA-core programs: X bound to the qkv dtype (arg `qkvArg`), L to lse's. */
export function genericProgram(
  source: string,
  entry: string,
  qkvArg: number,
  lseArg: number,
): Pick<CudaProgram, 'kind' | 'source' | 'entry' | 'dtypes' | 'defines' | 'block'> {
  return {
    kind: 'program',
    source,
    entry,
    dtypes: (args) => ({ X: args[qkvArg]!.desc.dtype, L: args[lseArg]!.desc.dtype }),
    defines: (_a, s) => ({ F64: L(s).f64 }),
    block: () => BLOCK_128,
  };
}

/** Rows per block of the tensor-core kernels (cuda-mma-common.ts TILE). */
export const MMA_TILE = 64;

/**
 * Whether the tensor-core kernels take this call: f16/bf16, a head dim they tile (a multiple of 16,
 * at most 64), and 16-byte aligned tensors (they load 8 elements at a time).
 */
export function mmaEligible(dtype: DType, l: AttentionLaunch, ptrs: readonly number[]): boolean {
  return (
    (dtype === 'bf16' || dtype === 'f16') &&
    l.headDim % 16 === 0 &&
    l.headDim <= 64 &&
    ptrs.every((p) => p % 16 === 0)
  );
}

/**
 * The tensor-core kernels' versions. v0 is the first set; v1 (ATTN_V1 in cuda-mma-common.ts: ldmatrix.x4 B
 * fragments, ex2.approx with the scale in one FFMA): `TANDEM_ATTN_MMA=v1`;
 * `v2` adds the single-pass backward (attention_backward/cuda-mma-bwd.ts) to it, `v3` the FA2-style
 * forward (cuda-mma-fwd2.ts) to v2, `v4` is v3 with the single pass in halves (cuda-mma-bwd-halves.ts).
 * `v5` pairs the FA2-style forward with v0's two-kernel backward: on an H100 (2026-12-05) v3's forward
 * was the fastest (0.47 vs 0.66 ms at B=64, T=1024) and v0's backward the fastest (2.44 vs 2.79 ms);
 * every version stores lse in base e, so any forward feeds any backward. All need head dims of two
 * 16-wide k steps a load (32, 64); others keep v0's kernels.
 * v5 is the default from sm_80 on (its forward takes 90 KiB of shared memory a block, which Turing's
 * 64 KiB cannot give): on an H100 (2026-12-06, five alternating pairs) it ran GPT-2's attention at
 * B=64 in 2.61-2.68 ms fwd+bwd against v0's 2.73-2.79 and the B=64 training step at 489 k tokens/s against
 * 477-479 k (bench/RESULTS.md, the twenty-fifth session).
 */
export type MmaVersion = 'v0' | 'v1' | 'v2' | 'v3' | 'v4' | 'v5';
const MMA_VERSIONS: readonly MmaVersion[] = ['v0', 'v1', 'v2', 'v3', 'v4', 'v5'];

/** The version a GPU of `arch` ("sm_90") gets unless TANDEM_ATTN_MMA says otherwise. */
export function defaultMmaVersion(arch: string): MmaVersion {
  const sm = Number(/^sm_(\d+)/.exec(arch)?.[1] ?? 0);
  return sm >= 80 ? 'v5' : 'v0';
}

/**
 * The version TANDEM_ATTN_MMA asks for (unset or empty: `fallback`, the GPU's default); any other value
 * fails the launch by name.
 */
export function mmaVersionRequested(
  env: NodeJS.ProcessEnv = process.env,
  fallback: MmaVersion = 'v0',
): MmaVersion {
  const v = env['TANDEM_ATTN_MMA'];
  if (v === undefined || v === '') return fallback;
  const known = MMA_VERSIONS.find((m) => m === v);
  if (known) return known;
  throw new TandemError(
    'TANDEM_ERR_INVALID_ARGUMENT',
    `TANDEM_ATTN_MMA must be one of ${MMA_VERSIONS.join(', ')}, got ${JSON.stringify(v)}`,
  );
}

export function mmaV1Eligible(l: AttentionLaunch): boolean {
  return l.headDim % 32 === 0;
}

/** The same program compiled with ATTN_V1 (a distinct program object: the cache keys on identity). */
export function withMmaV1<P extends Pick<CudaProgram, 'defines'>>(p: P): P {
  const defines = p.defines;
  return {
    ...p,
    defines: (a: readonly CudaArgDesc[], s: Scalars) => ({ ...defines?.(a, s), ATTN_V1: 1 }),
  };
}

/** TANDEM_ATTN_GRID=2d: every tensor-core kernel on the 2-D grid (the line's A/B; read once). */
const GRID_2D = process.env['TANDEM_ATTN_GRID'] === '2d';

/** Shared fields of the tensor-core programs; `rows` query or key rows per block. */
export function mmaProgram(
  source: string,
  entry: string,
  qkvArg: number,
  rows = MMA_TILE,
  lined = true,
): Pick<CudaProgram, 'kind' | 'source' | 'entry' | 'defines' | 'block' | 'grid'> {
  return {
    kind: 'program',
    source,
    entry,
    defines: (args, s) => ({ HD: L(s).headDim, IS_BF16: args[qkvArg]!.desc.dtype === 'bf16' ? 1 : 0 }),
    block: () => BLOCK_128,
    // A line of blocks, each head's tiles together (tileIndex in cuda-mma-common.ts says why), or
    // x = batch · head, y = tile: the forwards keep that, every head's heaviest tiles first (in a line
    // neither forward got faster on an H100 — its L2 hit rate rose to 76 %, its time did not move — while
    // the backward gained 0.3 ms of 3.3 in one call's A/B).
    grid: (_a, s) =>
      lined && !GRID_2D
        ? [L(s).batch * L(s).heads * Math.ceil(L(s).seq / rows), 1, 1]
        : [L(s).batch * L(s).heads, Math.ceil(L(s).seq / rows), 1],
  };
}
