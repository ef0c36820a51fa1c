/**
 * WGSL for onnx_scatter_elements and onnx_scatter_nd (scatter.ts), planned as the CUDA programs: one
 * invocation owns each destination line along the axis (elements) or each element position of the
 * slices (ND) and applies the updates that land there in index order, so repeated indices combine in
 * the reference's order with no atomics. Each invocation stores whole 32-bit elements it owns: f32 and
 * i32 with every reduction (f32 arithmetic; i32 add/mul wrap as CUDA's), f64 replacement (its two
 * words; WGSL cannot add f64). 16-bit and u8 elements are declined: two lines can share a word, and
 * WGSL has no sub-word stores.
 */
import type { DType } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { enumScalar } from '../common/scalars.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { pad6 } from './common.js';
import { SCATTER_REDUCTIONS, scatterElementsGeometry, scatterNdGeometry } from './scatter.js';
import { contiguousStrides } from './shapes.js';
import { array6, fields6, IS_NAN_WGSL, words } from './webgpu-elements.js';
import { linearStep, u32 } from './webgpu-steps.js';

type Reduction = (typeof SCATTER_REDUCTIONS)[number];

function reduction(op: string, scalars: Scalars): Reduction {
  return enumScalar(op, scalars, 'reduction', SCATTER_REDUCTIONS, 'none');
}

function scatterSupported(args: readonly TensorDesc[], red: () => Reduction): boolean {
  if (args.length !== 3 || args[0]!.dtype !== 'i32' || args[1]!.dtype !== args[2]!.dtype) return false;
  const d = args[2]!.dtype;
  if (d === 'f32' || d === 'i32') return true;
  try {
    return d === 'f64' && red() === 'none';
  } catch {
    return false; // a bad reduction: validation reports it
  }
}

/** `fn combine(a, b)` for a reduction on f32 or i32 (max/min: NaN wins, as on the CPU). */
function combineWgsl(r: Reduction, t: 'f32' | 'i32'): string {
  const nan = t === 'f32';
  const body = {
    none: 'b',
    add: 'a + b',
    mul: 'a * b',
    max: nan ? 'select(select(max(a, b), b, is_nan(b)), a, is_nan(a))' : 'max(a, b)',
    min: nan ? 'select(select(min(a, b), b, is_nan(b)), a, is_nan(a))' : 'min(a, b)',
  }[r];
  return `${nan && (r === 'max' || r === 'min') ? IS_NAN_WGSL : ''}fn combine(a: ${t}, b: ${t}) -> ${t} { return ${body}; }
`;
}

/** The statement applying update s at destination at (f64: both words copied). */
function applyWgsl(dtype: DType): string {
  return dtype === 'f64'
    ? 'Y[2u * at] = U[2u * s]; Y[2u * at + 1u] = U[2u * s + 1u];'
    : 'Y[at] = combine(Y[at], U[s]);';
}

function headerWgsl(dtype: DType, r: Reduction, params: string): string {
  const elem = dtype === 'f64' ? 'u32' : dtype;
  return `struct Params { ${params} }
@group(0) @binding(0) var<storage, read> I: array<i32>;
@group(0) @binding(1) var<storage, read> U: array<${elem}>;
@group(0) @binding(2) var<storage, read_write> Y: array<${elem}>;
@group(0) @binding(3) var<uniform> P: Params;
${dtype === 'f64' ? '' : combineWgsl(r, dtype as 'f32' | 'i32')}`;
}

function elementsWgsl(dtype: DType, r: Reduction): string {
  return `${headerWgsl(dtype, r, `n: u32, axis: u32, dim: i32, count: u32, ${fields6('ld', 'ix', 'ys').join(', ')}`)}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  ${array6('ld')}
  ${array6('ix')}
  ${array6('ys')}
  var rest = i;
  var ibase = 0u;
  var ybase = 0u;
  for (var a = 5; a >= 0; a--) {
    let c = rest % ld[a];
    rest = rest / ld[a];
    ibase += c * ix[a];
    ybase += c * ys[a];
  }
  for (var t = 0u; t < P.count; t++) {
    let s = ibase + t * ix[P.axis];
    var k = I[s];
    if (k < 0) { k += P.dim; }
    if (k < 0 || k >= P.dim) { continue; }
    let at = ybase + u32(k) * ys[P.axis];
    ${applyWgsl(dtype)}
  }
}
`;
}

export const onnxScatterElementsWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars) => scatterSupported(args, () => reduction('onnx_scatter_elements', scalars)),
  plan(args, scalars) {
    const [indices, y] = [args[0]!, args[2]!];
    const g = scatterElementsGeometry(y, indices, scalars);
    const n = numel(g.lineDims);
    const w = [
      ...words([n, g.axis + 6 - y.shape.length]),
      { type: 'i32' as const, value: g.dim },
      u32(g.count),
      ...words(pad6(g.lineDims, []).dims),
      ...words(pad6(indices.shape, contiguousStrides(indices.shape)).strides),
      ...words(pad6(y.shape, g.yStrides).strides),
    ];
    const wgsl = elementsWgsl(y.dtype, reduction('onnx_scatter_elements', scalars));
    return linearStep(wgsl, g.count === 0 ? 0 : n, [0, 1, 2], w);
  },
};

function ndWgsl(dtype: DType, r: Reduction): string {
  return `${headerWgsl(dtype, r, `n: u32, m: u32, rows: u32, ${fields6('dd', 'ds').join(', ')}`)}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  ${array6('dd')}
  ${array6('ds')}
  for (var row = 0u; row < P.rows; row++) {
    var off = 0u;
    var inside = true;
    for (var j = 0u; j < P.m; j++) {
      var k = I[row * P.m + j];
      let dim = i32(dd[j]);
      if (k < 0) { k += dim; }
      if (k < 0 || k >= dim) { inside = false; break; }
      off += u32(k) * ds[j];
    }
    if (!inside) { continue; }
    let at = off + i;
    let s = row * P.n + i;
    ${applyWgsl(dtype)}
  }
}
`;
}

export const onnxScatterNdWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars) => scatterSupported(args, () => reduction('onnx_scatter_nd', scalars)),
  plan(args, scalars) {
    const [indices, updates, y] = [args[0]!, args[1]!, args[2]!];
    const g = scatterNdGeometry(y, indices, updates);
    const pad = (v: readonly number[]) => [...v, ...new Array<number>(6 - v.length).fill(1)];
    const w = words([g.slice, g.m, g.rows, ...pad(g.dims), ...pad(g.strides)]);
    const wgsl = ndWgsl(y.dtype, reduction('onnx_scatter_nd', scalars));
    return linearStep(wgsl, g.rows === 0 ? 0 : g.slice, [0, 1, 2], w);
  },
};
