/** The conv ops of the deep-learning layer (issue 15); see docs/deep-learning-ops.md. */
import { type DType, epsilon } from '../../core/dtype.js';
import type { ConformanceCase } from '../case-types.js';
import { conv2dCpu } from '../conv2d/cpu.js';
import { conv2dCuda } from '../conv2d/cuda.js';
import { conv2dWebGpu } from '../conv2d/webgpu.js';
import { conv2dDef } from '../conv2d/def.js';
import { outputExtent } from '../conv2d/geometry.js';
import { conv2dReference } from '../conv2d/reference.js';
import { conv2dBackwardCpu } from '../conv2d_backward/cpu.js';
import { conv2dBackwardCuda } from '../conv2d_backward/cuda.js';
import { conv2dBackwardWebGpu } from '../conv2d_backward/webgpu.js';
import { conv2dBackwardDef } from '../conv2d_backward/def.js';
import { conv2dBackwardReference } from '../conv2d_backward/reference.js';
import { pool2dCpu } from '../pool2d/cpu.js';
import { pool2dCuda } from '../pool2d/cuda.js';
import { pool2dBackwardWebGpu, pool2dWebGpu } from '../pool2d/webgpu.js';
import { pool2dDef } from '../pool2d/def.js';
import { POOL_OPS } from '../pool2d/geometry.js';
import { pool2dReference } from '../pool2d/reference.js';
import { pool2dBackwardCpu } from '../pool2d_backward/cpu.js';
import { pool2dBackwardCuda } from '../pool2d_backward/cuda.js';
import { pool2dBackwardDef } from '../pool2d_backward/def.js';
import { pool2dBackwardReference } from '../pool2d_backward/reference.js';
import type { OpGroup } from './op-group.js';

const DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

/** Precision of the arithmetic: 16-bit floats compute in f32. */
function workEps(dtype: DType): number {
  return dtype === 'f64' ? epsilon('f64') : epsilon('f32');
}

/** A sum of `terms` products of inputs ≤ 1 in magnitude, rounded once to `dtype` (as gemm's cases). */
function sumTolerance(dtype: DType, terms: number): { rtol: number; atol: number } {
  return { rtol: 2 * epsilon(dtype), atol: 4 * terms * workEps(dtype) };
}

interface ConvShape {
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly o: number;
  readonly kh: number;
  readonly kw: number;
  readonly stride: number;
  readonly padding: number;
}

/** Odd sizes; kernels 3 and 5 (and 3x5); padding 0, 1, 2; stride 1 and 2. */
const CONV_SHAPES: readonly ConvShape[] = [
  { n: 2, c: 3, h: 7, w: 9, o: 5, kh: 3, kw: 3, stride: 1, padding: 1 },
  { n: 3, c: 2, h: 11, w: 8, o: 4, kh: 5, kw: 5, stride: 2, padding: 2 },
  { n: 1, c: 4, h: 6, w: 5, o: 3, kh: 3, kw: 3, stride: 2, padding: 0 },
  { n: 2, c: 3, h: 5, w: 7, o: 2, kh: 3, kw: 5, stride: 1, padding: 2 },
];

/** The Fashion-MNIST CNN's second layer (32 → 64 channels at 14x14, kernel 3, padding 1), f32. */
const CNN_LAYER: ConvShape = { n: 2, c: 32, h: 14, w: 14, o: 64, kh: 3, kw: 3, stride: 1, padding: 1 };

function convLabel(s: ConvShape): string {
  return `n${s.n} c${s.c} ${s.h}x${s.w} o${s.o} k${s.kh}x${s.kw} s${s.stride} p${s.padding}`;
}

function convArgs(s: ConvShape): { x: number[]; w: number[]; y: number[] } {
  const ho = outputExtent(s.h, s.kh, s.stride, s.padding);
  const wo = outputExtent(s.w, s.kw, s.stride, s.padding);
  return { x: [s.n, s.c, s.h, s.w], w: [s.o, s.c, s.kh, s.kw], y: [s.n, s.o, ho, wo] };
}

function convCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const runs = [
    ...DTYPES.flatMap((dtype) => CONV_SHAPES.map((s) => ({ s, dtype }))),
    { s: CNN_LAYER, dtype: 'f32' as DType },
  ];
  for (const { s, dtype } of runs) {
    const shapes = convArgs(s);
    const scalars = { stride: s.stride, padding: s.padding };
    const [, , ho, wo] = shapes.y as [number, number, number, number];
    out.push({
      name: `conv2d ${dtype} ${convLabel(s)}`,
      op: 'conv2d',
      args: {
        x: { shape: shapes.x, dtype },
        w: { shape: shapes.w, dtype },
        b: { shape: [s.o], dtype },
        y: { shape: shapes.y, dtype },
      },
      scalars,
      ...sumTolerance(dtype, s.c * s.kh * s.kw + 1),
    });
    for (const accumulate of [false, true]) {
      out.push({
        name: `conv2d_backward ${dtype} ${convLabel(s)}${accumulate ? ' accumulate' : ''}`,
        op: 'conv2d_backward',
        args: {
          dy: { shape: shapes.y, dtype },
          x: { shape: shapes.x, dtype },
          w: { shape: shapes.w, dtype },
          dx: { shape: shapes.x, dtype },
          dw: { shape: shapes.w, dtype },
          db: { shape: [s.o], dtype },
        },
        scalars: { ...scalars, accumulate },
        ...sumTolerance(dtype, Math.max(s.o * s.kh * s.kw, s.n * ho * wo) + 1),
      });
    }
  }
  return out;
}

interface PoolShape {
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly kernel: number;
  readonly stride: number;
  readonly padding: number;
}

/** The CNN's 2x2 max-pool at 28x28; odd sizes with floor rounding; overlapping windows; padding 1, 2. */
const POOL_SHAPES: readonly PoolShape[] = [
  { n: 2, c: 3, h: 28, w: 28, kernel: 2, stride: 2, padding: 0 },
  { n: 2, c: 3, h: 7, w: 9, kernel: 2, stride: 2, padding: 0 },
  { n: 1, c: 4, h: 7, w: 9, kernel: 3, stride: 2, padding: 1 },
  { n: 2, c: 2, h: 6, w: 5, kernel: 3, stride: 1, padding: 1 },
  { n: 1, c: 3, h: 11, w: 10, kernel: 5, stride: 2, padding: 2 },
];

function poolCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const s of POOL_SHAPES) {
      for (const op of POOL_OPS) {
        const ho = outputExtent(s.h, s.kernel, s.stride, s.padding);
        const wo = outputExtent(s.w, s.kernel, s.stride, s.padding);
        const x = [s.n, s.c, s.h, s.w];
        const y = [s.n, s.c, ho, wo];
        const scalars = { op, kernel: s.kernel, stride: s.stride, padding: s.padding };
        const label = `${op} ${dtype} n${s.n} c${s.c} ${s.h}x${s.w} k${s.kernel} s${s.stride} p${s.padding}`;
        const area = s.kernel * s.kernel;
        out.push({
          name: `pool2d ${label}`,
          op: 'pool2d',
          args: { x: { shape: x, dtype }, y: { shape: y, dtype } },
          scalars,
          // max copies an element exactly; avg sums kernel² of them.
          ...(op === 'max' ? { rtol: 0, atol: 0 } : sumTolerance(dtype, area)),
        });
        // An element of x lies in at most ⌈kernel/stride⌉² windows.
        const windows = Math.ceil(s.kernel / s.stride) ** 2;
        out.push({
          name: `pool2d_backward ${label}`,
          op: 'pool2d_backward',
          args: { x: { shape: x, dtype }, dy: { shape: y, dtype }, dx: { shape: x, dtype } },
          scalars,
          ...sumTolerance(dtype, windows),
        });
      }
    }
  }
  return out;
}

export const convGroup: OpGroup = {
  name: 'conv',
  defs: [conv2dDef, conv2dBackwardDef, pool2dDef, pool2dBackwardDef],
  impls: [
    { op: 'conv2d', backend: 'cpu', impl: conv2dCpu },
    { op: 'conv2d_backward', backend: 'cpu', impl: conv2dBackwardCpu },
    { op: 'pool2d', backend: 'cpu', impl: pool2dCpu },
    { op: 'pool2d_backward', backend: 'cpu', impl: pool2dBackwardCpu },
    { op: 'conv2d', backend: 'cuda', impl: conv2dCuda },
    { op: 'conv2d_backward', backend: 'cuda', impl: conv2dBackwardCuda },
    { op: 'pool2d', backend: 'cuda', impl: pool2dCuda },
    { op: 'pool2d_backward', backend: 'cuda', impl: pool2dBackwardCuda },
    { op: 'conv2d', backend: 'webgpu', impl: conv2dWebGpu },
    { op: 'conv2d_backward', backend: 'webgpu', impl: conv2dBackwardWebGpu },
    { op: 'pool2d', backend: 'webgpu', impl: pool2dWebGpu },
    { op: 'pool2d_backward', backend: 'webgpu', impl: pool2dBackwardWebGpu },
  ],
  references: {
    conv2d: conv2dReference,
    conv2d_backward: conv2dBackwardReference,
    pool2d: pool2dReference,
    pool2d_backward: pool2dBackwardReference,
  },
  cases: () => [...convCases(), ...poolCases()],
};
