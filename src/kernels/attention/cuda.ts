/**
 * attention on CUDA: the tensor-core kernel (cuda-mma.ts) for f16/bf16 with a head dim it tiles, the
 * CUDA-core flash kernel (cuda-generic.ts) for everything else. Both write y and lse in one pass.
 */
import type { CudaArg, CudaKernelContext, CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { GENERIC_FORWARD } from './cuda-generic.js';
import { MMA_FORWARD } from './cuda-mma.js';
import { FA2_KEYS, FA2_ROWS, MMA_FORWARD_FA2 } from './cuda-mma-fwd2.js';
import {
  type AttentionLaunch,
  L,
  asScalars,
  genericProgram,
  genericRows,
  defaultMmaVersion,
  launchOf,
  MMA_TILE,
  mmaEligible,
  mmaProgram,
  type MmaVersion,
  mmaV1Eligible,
  mmaVersionRequested,
  withMmaV1,
} from './cuda-plan.js';

/** args: qkv 0, y 1, lse 2. */
export const ATTENTION_FORWARD_GENERIC: CudaProgram = {
  ...genericProgram(GENERIC_FORWARD, 'tdm_attn_fwd', 0, 2),
  grid: (_a, s) => [L(s).batch * L(s).heads, Math.ceil(L(s).seq / genericRows(L(s))), 1],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i32', value: L(s).seq },
    { kind: 'i32', value: L(s).heads },
    { kind: 'i32', value: L(s).headDim },
    { kind: 'f64', value: L(s).scale },
  ],
};

export const ATTENTION_FORWARD_MMA: CudaProgram = {
  ...mmaProgram(MMA_FORWARD, 'tdm_attn_fwd_mma', 0, 2 * MMA_TILE, false),
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i32', value: L(s).seq },
    { kind: 'i32', value: L(s).heads },
    { kind: 'f32', value: L(s).scale * Math.LOG2E },
  ],
};

export const ATTENTION_FORWARD_MMA_V1: CudaProgram = withMmaV1(ATTENTION_FORWARD_MMA);

/** Q's rows and two stages of K and V tiles, rows of d + 8 16-bit values (92,160 bytes at d = 64). */
const fa2Shared = (d: number): number => (FA2_ROWS + 4 * FA2_KEYS) * (d + 8) * 2;

/** The FA2-style forward (v3): the same parameters and grid as the current tensor-core forward. */
export const ATTENTION_FORWARD_MMA_FA2: CudaProgram = {
  ...withMmaV1(mmaProgram(MMA_FORWARD_FA2, 'tdm_attn_fwd_mma', 0, FA2_ROWS, false)),
  params: ATTENTION_FORWARD_MMA.params,
  sharedBytes: (_a, s) => fa2Shared(L(s).headDim),
  maxDynamicSharedBytes: fa2Shared(64),
};

/**
 * 'auto': tensor cores when the call fits them (their v1…v4 with TANDEM_ATTN_MMA=v1…v4 where it fits),
 * else CUDA cores; the others force one kernel (the tests compare each against the reference).
 */
export type AttentionPath =
  | 'auto'
  | 'generic'
  | 'tensor-core'
  | 'tensor-core-v1'
  | 'tensor-core-v2'
  | 'tensor-core-v3'
  | 'tensor-core-v4'
  | 'tensor-core-v5';

const FORCED: Readonly<Record<AttentionPath, MmaVersion | null>> = {
  auto: null,
  generic: null,
  'tensor-core': null,
  'tensor-core-v1': 'v1',
  'tensor-core-v2': 'v2',
  'tensor-core-v3': 'v3',
  'tensor-core-v4': 'v4',
  'tensor-core-v5': 'v5',
};

function plan(args: readonly CudaArg[], scalars: Scalars): AttentionLaunch | null {
  const launch = launchOf('attention', args[0]!, scalars);
  return launch.batch === 0 || launch.seq === 0 ? null : launch;
}

function run(path: AttentionPath, ctx: CudaKernelContext, args: readonly CudaArg[], scalars: Scalars): void {
  const launch = plan(args, scalars);
  if (launch === null) return;
  const eligible = mmaEligible(
    args[0]!.desc.dtype,
    launch,
    args.map((a) => a.ptr),
  );
  const version = mmaPathVersion(path, eligible, launch, 'attention', ctx.arch);
  const mma =
    version === 'v3' || version === 'v4' || version === 'v5'
      ? ATTENTION_FORWARD_MMA_FA2
      : version === 'v0'
        ? ATTENTION_FORWARD_MMA
        : ATTENTION_FORWARD_MMA_V1;
  const program = path !== 'generic' && eligible ? mma : ATTENTION_FORWARD_GENERIC;
  ctx.launch(program, args, asScalars(launch));
}

/**
 * Which tensor-core kernels a launch gets (v2: v1's forward, the single-pass backward; v3: the FA2-style
 * forward, the single-pass backward; v4: v3 with the single pass in halves; v5: the FA2-style forward,
 * v0's backward; 'auto' without TANDEM_ATTN_MMA: `defaultMmaVersion` of the GPU's `arch`); throws when
 * a forced tensor-core path does not fit the call (the GPU tests force each kernel and must not silently
 * test another).
 */
export function mmaPathVersion(
  path: AttentionPath,
  eligible: boolean,
  launch: AttentionLaunch,
  op: string,
  arch: string,
): MmaVersion {
  const forced = FORCED[path];
  if ((path === 'tensor-core' || forced !== null) && !eligible)
    throw new Error(`${op}: this call does not fit the tensor-core kernel`);
  if (forced !== null && !mmaV1Eligible(launch))
    throw new Error(`${op}: the tensor-core kernels' ${forced} needs a head dim of 32 or 64`);
  if (forced !== null) return forced;
  return path === 'auto' && mmaV1Eligible(launch)
    ? mmaVersionRequested(process.env, defaultMmaVersion(arch))
    : 'v0';
}

/** One path forced (GPU tests compare each against the reference); `attentionCuda` picks. */
export function attentionCudaPath(path: AttentionPath): CudaNative {
  return { kind: 'native', run: (ctx, args, scalars) => run(path, ctx, args, scalars) };
}

export const attentionCuda: CudaNative = attentionCudaPath('auto');
