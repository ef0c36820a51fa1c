/**
 * ScatterElements and ScatterND as an op group, with their conformance cases (repeated indices draw on
 * purpose: every reduction meets them). WebGPU versions (f32, i32; f64 replacement) in webgpu-scatter.ts.
 */
import { epsilon } from '../../core/dtype.js';
import type { ConformanceCase } from '../case-types.js';
import { COPY_DTYPES, elementTolerance, type OnnxOpGroup, sumTolerance } from './common.js';
import {
  SCATTER_REDUCTIONS,
  onnxScatterElementsCpu,
  onnxScatterElementsCuda,
  onnxScatterElementsDef,
  onnxScatterElementsReference,
  onnxScatterNdCpu,
  onnxScatterNdCuda,
  onnxScatterNdDef,
  onnxScatterNdReference,
} from './scatter.js';
import { onnxScatterElementsWebGpu, onnxScatterNdWebGpu } from './webgpu-scatter.js';

/**
 * Exact for replacement, max and min (and integers); a few roundings per repeated index otherwise. A sum
 * over repeated indices is rounded to the element type after every update on CUDA (the element is the
 * only state: ONNX Runtime does the same), while the CPU and the reference round once — so 16-bit sums
 * get one rounding of the element type per term (the H200 saw 4 bf16 ULP after 7 updates of [-1, 1]).
 */
function tolerance(dtype: string, reduction: string, repeats: number) {
  if (reduction === 'none' || reduction === 'max' || reduction === 'min' || dtype === 'i32' || dtype === 'u8')
    return { rtol: 0, atol: 0 };
  const d = dtype as (typeof COPY_DTYPES)[number];
  if (reduction !== 'add') return elementTolerance(d, 2 * repeats + 2);
  const sum = sumTolerance(d, repeats + 1);
  return { rtol: sum.rtol, atol: Math.max(sum.atol, (repeats + 1) * epsilon(d)) };
}

function scatterCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of COPY_DTYPES)
    for (const reduction of SCATTER_REDUCTIONS) {
      // u8 sums and products leave the byte range: replacement, max and min only.
      if (dtype === 'u8' && (reduction === 'add' || reduction === 'mul')) continue;
      // i32 products of repeated indices stay far inside the range with factors 1..3.
      const small = dtype === 'i32' && reduction === 'mul' ? { range: 'index' as const, min: 1, max: 4 } : {};
      for (const [y, indices, axis] of [
        [[3, 4], [5, 4], 0],
        [[2, 3, 5], [2, 2, 7], -1],
        [[4, 3, 2, 2], [2, 3, 1, 2], 1],
      ] as const) {
        const dim = y[axis < 0 ? axis + y.length : axis]!;
        out.push({
          name: `onnx_scatter_elements ${reduction} ${dtype} [${y.join(',')}] indices [${indices.join(',')}] axis ${axis}`,
          op: 'onnx_scatter_elements',
          args: {
            // Negative indices count from the end; dim itself (drawn at times) is out of range: skipped.
            indices: { shape: [...indices], dtype: 'i32', range: 'index', min: -dim, max: dim + 1 },
            updates: { shape: [...indices], dtype, ...small },
            y: { shape: [...y], dtype, ...small },
          },
          scalars: { axis, reduction },
          ...tolerance(dtype, reduction, indices[axis < 0 ? axis + y.length : axis]!),
        });
      }
      for (const [y, indices] of [
        [
          [4, 5],
          [6, 1],
        ],
        [
          [3, 4, 5],
          [2, 3, 2],
        ],
        [
          [3, 4],
          [5, 2],
        ],
      ] as const) {
        const m = indices[indices.length - 1]!;
        const updates = [...indices.slice(0, -1), ...y.slice(m)];
        const lim = Math.min(...y.slice(0, m));
        out.push({
          name: `onnx_scatter_nd ${reduction} ${dtype} [${y.join(',')}] indices [${indices.join(',')}]`,
          op: 'onnx_scatter_nd',
          args: {
            indices: { shape: [...indices], dtype: 'i32', range: 'index', min: -lim, max: lim + 1 },
            updates: { shape: updates, dtype, ...small },
            y: { shape: [...y], dtype, ...small },
          },
          scalars: { reduction },
          ...tolerance(
            dtype,
            reduction,
            indices.slice(0, -1).reduce((a: number, b: number) => a * b, 1),
          ),
        });
      }
    }
  return out;
}

export const onnxScatterGroup: OnnxOpGroup = {
  name: 'onnx-scatter',
  defs: [onnxScatterElementsDef, onnxScatterNdDef],
  impls: [
    { op: 'onnx_scatter_elements', backend: 'cpu', impl: onnxScatterElementsCpu },
    { op: 'onnx_scatter_nd', backend: 'cpu', impl: onnxScatterNdCpu },
    { op: 'onnx_scatter_elements', backend: 'cuda', impl: onnxScatterElementsCuda },
    { op: 'onnx_scatter_nd', backend: 'cuda', impl: onnxScatterNdCuda },
    { op: 'onnx_scatter_elements', backend: 'webgpu', impl: onnxScatterElementsWebGpu },
    { op: 'onnx_scatter_nd', backend: 'webgpu', impl: onnxScatterNdWebGpu },
  ],
  references: {
    onnx_scatter_elements: onnxScatterElementsReference,
    onnx_scatter_nd: onnxScatterNdReference,
  },
  cases: () => scatterCases(),
};
