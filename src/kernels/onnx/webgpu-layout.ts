/**
 * The ONNX data-movement ops on WebGPU: transpose, slice, concat and expand as one strided copy
 * (strided.ts's plan; strides may be 0 or negative, so they are i32), and resize. Elements are copied
 * as 32-bit words, so f32 and i32 tensors are served; 16-bit, 8-bit and f64 tensors are declined (the
 * queue reports TANDEM_ERR_DTYPE); gather and pad likewise. Resize reads its per-axis index and weight tables (resize.ts's
 * axisTable, the CPU's exactly, so nearest picks the same source pixel) from the uniform block.
 */
import { numel } from '../../core/shape.js';
import type { TensorDesc } from '../../devices/device.js';
import type { UniformWord, WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { linearStep } from './webgpu-steps.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { pad6 } from './common.js';
import { contiguousStrides } from './shapes.js';
import { gatherGeometry, padGeometry, PAD_MODES, storedValue } from './gather-pad.js';
import { concatPlan, expandPlan, slicePlan, transposePlan } from './layout.js';
import { axisTable, resizeGeometry } from './resize.js';
import type { PlanFn } from './strided.js';

const FIELDS = ['d', 'ss', 'ds'].flatMap((p, j) =>
  [0, 1, 2, 3, 4, 5].map((k) => `${p}${k}: ${j === 0 ? 'u32' : 'i32'}`),
);

const STRIDED_WGSL = `struct Params { n: u32, sbase: i32, dbase: i32, ${FIELDS.join(', ')} }
@group(0) @binding(0) var<storage, read> S: array<u32>;
@group(0) @binding(1) var<storage, read_write> D: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  var dims = array<u32, 6>(P.d0, P.d1, P.d2, P.d3, P.d4, P.d5);
  var ss = array<i32, 6>(P.ss0, P.ss1, P.ss2, P.ss3, P.ss4, P.ss5);
  var ds = array<i32, 6>(P.ds0, P.ds1, P.ds2, P.ds3, P.ds4, P.ds5);
  var r = i;
  var s = P.sbase;
  var d = P.dbase;
  for (var k = 5; k >= 0; k--) { let c = i32(r % dims[k]); r = r / dims[k]; s += c * ss[k]; d += c * ds[k]; }
  D[d] = S[s];
}
`;

const WORD_DTYPES = ['f32', 'i32'];

function stridedWebGpu(plan: PlanFn): WebGpuKernel {
  return {
    kind: 'webgpu-kernel',
    supports: (args) =>
      args.length === 2 && args[0]!.dtype === args[1]!.dtype && WORD_DTYPES.includes(args[0]!.dtype),
    plan(args, scalars) {
      const p = plan(args[0]!, args[1]!, scalars);
      const n = numel(p.shape);
      const src = pad6(p.shape, p.srcStrides);
      const dst = pad6(p.shape, p.dstStrides);
      const words: UniformWord[] = [
        { type: 'u32', value: n },
        { type: 'i32', value: p.srcBase },
        { type: 'i32', value: p.dstBase },
        ...src.dims.map((value) => ({ type: 'u32' as const, value })),
        ...src.strides.map((value) => ({ type: 'i32' as const, value })),
        ...dst.strides.map((value) => ({ type: 'i32' as const, value })),
      ];
      if (n === 0) return [];
      return [
        {
          kind: 'dispatch',
          wgsl: STRIDED_WGSL,
          entry: 'main',
          bind: [0, 1],
          uniforms: words,
          workgroups: { linear: Math.ceil(n / 256) },
        },
      ];
    },
  };
}

export const onnxTransposeWebGpu = stridedWebGpu(transposePlan);
export const onnxSliceWebGpu = stridedWebGpu(slicePlan);
export const onnxConcatWebGpu = stridedWebGpu(concatPlan);
export const onnxExpandWebGpu = stridedWebGpu(expandPlan);

/** Table entries that fit the 64 KiB uniform block with room to spare (3 words per output row/column). */
const MAX_RESIZE_TABLE = 4096;

function resizeWgsl(linear: boolean): string {
  const pick = linear
    ? `let r0 = base + T(0u, oh) * P.W;
  let r1 = base + T(1u, oh) * P.W;
  let tr = bitcast<f32>(T(2u, oh));
  let c0 = T(0u, P.HO + ow);
  let c1 = T(1u, P.HO + ow);
  let tc = bitcast<f32>(T(2u, P.HO + ow));
  let top = X[r0 + c0] * (1.0 - tc) + X[r0 + c1] * tc;
  let bottom = X[r1 + c0] * (1.0 - tc) + X[r1 + c1] * tc;
  Y[i] = top * (1.0 - tr) + bottom * tr;`
    : `Y[i] = X[base + T(0u, oh) * P.W + T(0u, P.HO + ow)];`;
  return `struct Params { n: u32, W: u32, HO: u32, WO: u32, plane: u32, len: u32, p0: u32, p1: u32,
  t: array<vec4<u32>, ${(3 * MAX_RESIZE_TABLE) / 4}> }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
/** Table k (0: first index, 1: second index, 2: weight bits) at entry j (rows, then columns). */
fn T(k: u32, j: u32) -> u32 { let w = k * P.len + j; return P.t[w / 4u][w % 4u]; }
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let ow = i % P.WO;
  let oh = (i / P.WO) % P.HO;
  let base = (i / (P.WO * P.HO)) * P.plane;
  ${pick}
}
`;
}

export const onnxResizeWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  // Bicubic and tf_crop_and_resize have no WGSL version: declined, placed on the CPU or CUDA.
  supports: (args, scalars) =>
    args.length === 2 &&
    scalars['mode'] !== 'cubic' &&
    scalars['coordinateTransformationMode'] !== 'tf_crop_and_resize' &&
    args.every((a) => a.dtype === 'f32') &&
    (args[1]!.shape[2] ?? 0) + (args[1]!.shape[3] ?? 0) <= MAX_RESIZE_TABLE,
  plan(args: readonly TensorDesc[], scalars) {
    const g = resizeGeometry(args[0]!, args[1]!, scalars);
    const rows = axisTable(g, g.h, g.ho, g.scaleH);
    const cols = axisTable(g, g.w, g.wo, g.scaleW);
    const len = g.ho + g.wo;
    const table: UniformWord[] = [];
    for (const k of ['i0', 'i1'] as const)
      for (const t of [rows, cols]) for (const v of t[k]) table.push({ type: 'u32', value: v });
    for (const t of [rows, cols]) for (const v of t.t) table.push({ type: 'f32', value: v });
    const n = g.planes * g.ho * g.wo;
    const head = [n, g.w, g.ho, g.wo, g.h * g.w, len, 0, 0].map((value) => ({ type: 'u32' as const, value }));
    // The uniform struct has a fixed table size; the words past `table` are padding.
    const pad = Array.from({ length: 3 * MAX_RESIZE_TABLE - table.length }, () => ({
      type: 'u32' as const,
      value: 0,
    }));
    if (n === 0) return [];
    return [
      {
        kind: 'dispatch',
        wgsl: resizeWgsl(g.mode === 'linear'),
        entry: 'main',
        bind: [0, 1],
        uniforms: [...head, ...table, ...pad],
        workgroups: { linear: Math.ceil(n / 256) },
      },
    ];
  },
};

/** The 32-bit pattern of `value` stored as `dtype` (f32 or i32): pad's constant, gather's miss value. */
function wordOf(dtype: string, value: number): UniformWord {
  if (dtype === 'i32') return { type: 'i32', value: storedValue('i32', value) };
  return { type: 'f32', value };
}

/** y = take(data, indices, axis); an index outside [−dim, dim) gives the miss word (NaN, or 0 for i32). */
const GATHER_WGSL = `struct Params { n: u32, dim: i32, count: u32, inner: u32, miss: u32 }
@group(0) @binding(0) var<storage, read> S: array<u32>;
@group(0) @binding(1) var<storage, read> I: array<i32>;
@group(0) @binding(2) var<storage, read_write> D: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let inner = i % P.inner;
  let j = (i / P.inner) % P.count;
  let o = i / (P.inner * P.count);
  var k = I[j];
  if (k < 0) { k += P.dim; }
  if (k < 0 || k >= P.dim) { D[i] = P.miss; return; }
  D[i] = S[(o * u32(P.dim) + u32(k)) * P.inner + inner];
}
`;

export const onnxGatherWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) =>
    args.length === 3 &&
    args[0]!.dtype === args[2]!.dtype &&
    args[1]!.dtype === 'i32' &&
    WORD_DTYPES.includes(args[0]!.dtype),
  plan(args, scalars) {
    const g = gatherGeometry(args[0]!, args[1]!, scalars);
    const n = numel(g.shape);
    const miss = wordOf(args[0]!.dtype, args[0]!.dtype === 'i32' ? 0 : NaN);
    const words: UniformWord[] = [
      { type: 'u32', value: n },
      { type: 'i32', value: g.dim },
      { type: 'u32', value: g.count },
      { type: 'u32', value: g.inner },
      miss,
    ];
    return linearStep(GATHER_WGSL, n, [0, 1, 2], words);
  },
};

function padWgsl(mode: number): string {
  const outside = [
    'inside = false;',
    'if (s < 0) { s = -s; } if (s >= d) { s = 2 * (d - 1) - s; }',
    's = select(d - 1, 0, s < 0);',
  ][mode]!;
  const fields = ['od', 'xd', 'xs', 'bg'].flatMap((p) => [0, 1, 2, 3, 4, 5].map((k) => `${p}${k}: i32`));
  const arr = (p: string) => `array<i32, 6>(${[0, 1, 2, 3, 4, 5].map((k) => `P.${p}${k}`).join(', ')})`;
  return `struct Params { n: u32, value: u32, ${fields.join(', ')} }
@group(0) @binding(0) var<storage, read> S: array<u32>;
@group(0) @binding(1) var<storage, read_write> D: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  var od = ${arr('od')};
  var xd = ${arr('xd')};
  var xs = ${arr('xs')};
  var bg = ${arr('bg')};
  var r = i32(i);
  var off = 0;
  var inside = true;
  for (var k = 5; k >= 0; k--) {
    let c = r % od[k];
    r = r / od[k];
    var s = c - bg[k];
    let d = xd[k];
    if (s < 0 || s >= d) { ${outside} }
    off += s * xs[k];
  }
  if (!inside) { D[i] = P.value; return; }
  D[i] = S[off];
}
`;
}

export const onnxPadWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  // Bicubic and tf_crop_and_resize have no WGSL version: declined, placed on the CPU or CUDA.
  supports: (args, scalars) =>
    args.length === 2 &&
    scalars['mode'] !== 'cubic' &&
    scalars['coordinateTransformationMode'] !== 'tf_crop_and_resize' &&
    args[0]!.dtype === args[1]!.dtype &&
    WORD_DTYPES.includes(args[0]!.dtype),
  plan(args, scalars) {
    const x = args[0]!;
    const g = padGeometry(x, scalars);
    const n = numel(g.shape);
    const xp = pad6(x.shape, contiguousStrides(x.shape));
    const ints = [...pad6(g.shape, []).dims, ...xp.dims, ...xp.strides, ...pad6(g.shape, g.begins).strides];
    const words: UniformWord[] = [
      { type: 'u32', value: n },
      wordOf(x.dtype, g.value),
      ...ints.map((value) => ({ type: 'i32' as const, value })),
    ];
    return linearStep(padWgsl(PAD_MODES.indexOf(g.mode)), n, [0, 1], words);
  },
};
