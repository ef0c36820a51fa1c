/** The optim ops of the deep-learning layer (issue 15); see docs/deep-learning-ops.md. */
import { type DType, epsilon } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { ConformanceCase } from '../case-types.js';
import { adamwCpu } from '../adamw/cpu.js';
import { adamwCuda, adamwHyperCuda, adamwMixedCuda, adamwMixedHyperCuda } from '../adamw/cuda.js';
import { HYPER_LENGTH, adamwHyperParams, adamwHyperValues } from '../adamw/params.js';
import { adamwHyperCpu, adamwMixedHyperCpu } from '../adamw_hyper/cpu.js';
import { adamwHyperDef, adamwMixedHyperDef } from '../adamw_hyper/def.js';
import { adamwHyperReference, adamwMixedHyperReference } from '../adamw_hyper/reference.js';
import { adamwWebGpu } from '../adamw/webgpu.js';
import { adamwDef } from '../adamw/def.js';
import { adamwReference } from '../adamw/reference.js';
import { adamwMixedCpu } from '../adamw_mixed/cpu.js';
import { adamwMixedDef } from '../adamw_mixed/def.js';
import { adamwMixedReference } from '../adamw_mixed/reference.js';
import { ampUpdateCpu } from '../amp_update/cpu.js';
import { ampUpdateCuda } from '../amp_update/cuda.js';
import { ampUpdateDef } from '../amp_update/def.js';
import { ampUpdateReference } from '../amp_update/reference.js';
import { sgdCpu } from '../sgd/cpu.js';
import { sgdCuda } from '../sgd/cuda.js';
import { sgdWebGpu } from '../sgd/webgpu.js';
import { sgdDef } from '../sgd/def.js';
import { sgdReference } from '../sgd/reference.js';
import { sumsqCpu } from '../sumsq/cpu.js';
import { sumsqCuda } from '../sumsq/cuda.js';
import { sumsqWebGpu } from '../sumsq/webgpu.js';
import { sumsqDef } from '../sumsq/def.js';
import { sumsqReference } from '../sumsq/reference.js';
import type { OpGroup } from './op-group.js';

/** Shape of the parameter tensors in the optimizer cases: not a multiple of any block size. */
const PARAM_SHAPE = [3, 1001];

/** Which norm the case feeds: a random finite one, or a non-finite one to exercise the skip. */
type NormKind = 'finite' | 'inf' | 'nan';

interface Variant {
  readonly label: string;
  readonly scalars: Scalars;
  readonly norm: NormKind;
}

const ADAMW_VARIANTS: readonly Variant[] = [
  { label: 'step 1', scalars: { lr: 1e-2, step: 1 }, norm: 'finite' },
  {
    label: 'step 7 wd 0.1 unscale + clip',
    scalars: { lr: 3e-3, step: 7, weightDecay: 0.1, gradScale: 0.5, maxNorm: 0.1, skipNonFinite: true },
    norm: 'finite',
  },
  {
    // beta1 0.3 makes lerp's weight 0.7: torch's other lerp branch. maxNorm 100 never clips.
    label: 'step 7 beta1 0.3 clip inactive',
    scalars: { lr: 2e-2, step: 7, beta1: 0.3, beta2: 0.99, eps: 1e-6, gradScale: 0.25, maxNorm: 100 },
    norm: 'finite',
  },
  {
    label: 'skipNonFinite norm inf',
    scalars: { lr: 1e-2, step: 3, maxNorm: 1, skipNonFinite: true },
    norm: 'inf',
  },
  { label: 'skipNonFinite norm NaN', scalars: { lr: 1e-2, step: 3, skipNonFinite: true }, norm: 'nan' },
];

const SGD_VARIANTS: readonly Variant[] = [
  { label: 'plain', scalars: { lr: 0.1 }, norm: 'finite' },
  {
    label: 'momentum dampening wd',
    scalars: { lr: 0.05, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 },
    norm: 'finite',
  },
  { label: 'first step', scalars: { lr: 0.05, momentum: 0.9, dampening: 0.1, first: true }, norm: 'finite' },
  {
    label: 'nesterov unscale + clip',
    scalars: {
      lr: 0.05,
      momentum: 0.9,
      nesterov: true,
      weightDecay: 1e-3,
      gradScale: 0.5,
      maxNorm: 0.2,
      skipNonFinite: true,
    },
    norm: 'finite',
  },
  {
    label: 'skipNonFinite norm inf',
    scalars: { lr: 0.1, momentum: 0.9, maxNorm: 1, skipNonFinite: true },
    norm: 'inf',
  },
];

function normArg(
  dtype: DType,
  kind: NormKind,
): { shape: number[]; dtype: DType; range: 'positive' | 'inf' | 'nan' } {
  return { shape: [1], dtype, range: kind === 'finite' ? 'positive' : kind };
}

function sumsqCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
    const acc: DType = dtype === 'f64' ? 'f64' : 'f32';
    for (const shape of [[1], [5000], [3, 17, 5], [70001]]) {
      out.push({
        name: `sumsq ${dtype} [${shape}]`,
        op: 'sumsq',
        args: { x: { shape, dtype }, acc: { shape: [1], dtype: acc, range: 'positive' } },
        scalars: {},
        // Backends sum in different orders (blocks, atomics, a workgroup tree in f32 on WebGPU).
        rtol: 32 * epsilon(acc),
        atol: 0,
      });
    }
  }
  return out;
}

function adamwCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const pairs: readonly (readonly [DType, DType])[] = [
    ['f32', 'f32'],
    ['f32', 'bf16'],
    ['f32', 'f16'],
    ['f64', 'f64'],
  ];
  for (const [p, g] of pairs) {
    for (const v of ADAMW_VARIANTS) {
      out.push({
        name: `adamw p ${p} g ${g} ${v.label}`,
        op: 'adamw',
        args: {
          p: { shape: PARAM_SHAPE, dtype: p },
          g: { shape: PARAM_SHAPE, dtype: g },
          m: { shape: PARAM_SHAPE, dtype: p },
          v: { shape: PARAM_SHAPE, dtype: p, range: 'positive' },
          norm: normArg(p, v.norm),
        },
        scalars: v.scalars,
        rtol: 4 * epsilon(p),
        atol: 4 * epsilon(p),
      });
    }
  }
  for (const [p, g] of [
    ['f16', 'f16'],
    ['bf16', 'bf16'],
    ['bf16', 'f32'],
  ] as const) {
    for (const v of ADAMW_VARIANTS) {
      out.push({
        name: `adamw_mixed p ${p} g ${g} ${v.label}`,
        op: 'adamw_mixed',
        args: {
          p: { shape: PARAM_SHAPE, dtype: p },
          g: { shape: PARAM_SHAPE, dtype: g },
          m: { shape: PARAM_SHAPE, dtype: 'f32' },
          v: { shape: PARAM_SHAPE, dtype: 'f32', range: 'positive' },
          master: { shape: PARAM_SHAPE, dtype: 'f32' },
          norm: normArg('f32', v.norm),
        },
        scalars: v.scalars,
        // p is the f32 master rounded once to 16 bits; the master and moments are far closer.
        rtol: epsilon(p),
        atol: 4 * epsilon('f32'),
      });
    }
  }
  return out;
}

/**
 * The _hyper ops over the same variants: each variant's lr, step and gradScale become the `hyper` tensor's values
 * (as the optimizer writes them), the other scalars stay.
 */
function adamwHyperCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const c of adamwCases()) {
    const { lr, step, gradScale, ...rest } = c.scalars as Record<string, number | boolean>;
    const op = c.op === 'adamw' ? 'adamw_hyper' : 'adamw_mixed_hyper';
    const values = adamwHyperValues(
      adamwHyperParams(op, rest),
      Number(lr),
      Number(step),
      gradScale === undefined ? 1 : Number(gradScale),
    );
    out.push({
      ...c,
      name: c.name.replace(c.op, op),
      op,
      args: { ...c.args, hyper: { shape: [HYPER_LENGTH], dtype: 'f64', values } },
      scalars: rest,
    });
  }
  return out;
}

/**
 * amp_update over the loss scaler's cases: a clean step mid-interval, the step that grows the scale,
 * growth that would leave the f32 range (kept), and inf/NaN norms (back-off, nothing else changes).
 */
function ampUpdateCases(): ConformanceCase[] {
  const runs: readonly {
    label: string;
    norm: NormKind;
    normValue?: number;
    scale: number;
    state: number[];
  }[] = [
    { label: 'clean', norm: 'finite', scale: 65536, state: [5, 41] },
    { label: 'grows', norm: 'finite', normValue: 3.5e9, scale: 32768, state: [2, 0] },
    { label: 'growth past f32', norm: 'finite', scale: 3e38, state: [2, 7] },
    { label: 'inf', norm: 'inf', scale: 65536, state: [2, 9] },
    { label: 'nan', norm: 'nan', scale: 1024, state: [1, 9] },
  ];
  const out: ConformanceCase[] = [];
  for (const dtype of ['f32', 'f64'] as const)
    for (const r of runs)
      out.push({
        name: `amp_update norm ${dtype} ${r.label}`,
        op: 'amp_update',
        args: {
          norm:
            r.normValue === undefined ? normArg(dtype, r.norm) : { shape: [1], dtype, values: [r.normValue] },
          scale: { shape: [1], dtype: 'f64', values: [Math.fround(r.scale)] },
          state: { shape: [2], dtype: 'f64', values: r.state },
          hyper: { shape: [HYPER_LENGTH], dtype: 'f64', values: [1, 2, 3, 4] },
          lr: { shape: [1], dtype: 'f64', values: [6e-4] },
        },
        scalars: { beta1: 0.9, beta2: 0.95, growthInterval: 3 },
        // pow on the GPU may differ from the host's in the last bit of the bias corrections.
        rtol: 4 * epsilon('f64'),
        atol: 0,
      });
  return out;
}

function sgdCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const pairs: readonly (readonly [DType, DType])[] = [
    ['f32', 'f32'],
    ['f64', 'f64'],
    ['f16', 'f16'],
    ['bf16', 'bf16'],
    ['f32', 'bf16'],
  ];
  for (const [p, g] of pairs) {
    for (const v of SGD_VARIANTS) {
      out.push({
        name: `sgd p ${p} g ${g} ${v.label}`,
        op: 'sgd',
        args: {
          p: { shape: PARAM_SHAPE, dtype: p },
          g: { shape: PARAM_SHAPE, dtype: g },
          buf: { shape: PARAM_SHAPE, dtype: p },
          norm: normArg(p === 'f64' ? 'f64' : 'f32', v.norm),
        },
        scalars: v.scalars,
        // p - lr·d and the momentum sum can cancel: the error scales with the inputs.
        rtol: 2 * epsilon(p),
        atol: 4 * epsilon(p),
      });
    }
  }
  return out;
}

export const optimGroup: OpGroup = {
  name: 'optim',
  defs: [sumsqDef, adamwDef, adamwMixedDef, adamwHyperDef, adamwMixedHyperDef, ampUpdateDef, sgdDef],
  impls: [
    { op: 'sumsq', backend: 'cpu', impl: sumsqCpu },
    { op: 'adamw', backend: 'cpu', impl: adamwCpu },
    { op: 'adamw_mixed', backend: 'cpu', impl: adamwMixedCpu },
    { op: 'adamw_hyper', backend: 'cpu', impl: adamwHyperCpu },
    { op: 'adamw_mixed_hyper', backend: 'cpu', impl: adamwMixedHyperCpu },
    { op: 'amp_update', backend: 'cpu', impl: ampUpdateCpu },
    { op: 'sgd', backend: 'cpu', impl: sgdCpu },
    { op: 'sumsq', backend: 'cuda', impl: sumsqCuda },
    { op: 'adamw', backend: 'cuda', impl: adamwCuda },
    { op: 'adamw_mixed', backend: 'cuda', impl: adamwMixedCuda },
    { op: 'adamw_hyper', backend: 'cuda', impl: adamwHyperCuda },
    { op: 'adamw_mixed_hyper', backend: 'cuda', impl: adamwMixedHyperCuda },
    { op: 'amp_update', backend: 'cuda', impl: ampUpdateCuda },
    { op: 'sgd', backend: 'cuda', impl: sgdCuda },
    { op: 'sumsq', backend: 'webgpu', impl: sumsqWebGpu },
    { op: 'adamw', backend: 'webgpu', impl: adamwWebGpu },
    { op: 'sgd', backend: 'webgpu', impl: sgdWebGpu },
  ],
  references: {
    sumsq: sumsqReference,
    adamw: adamwReference,
    adamw_mixed: adamwMixedReference,
    adamw_hyper: adamwHyperReference,
    adamw_mixed_hyper: adamwMixedHyperReference,
    amp_update: ampUpdateReference,
    sgd: sgdReference,
  },
  cases: () => [...sumsqCases(), ...adamwCases(), ...adamwHyperCases(), ...ampUpdateCases(), ...sgdCases()],
};
