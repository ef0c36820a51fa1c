/**
 * GridSample, RoiAlign, MaxPool with indices and Det as an op group (kernels that read a small
 * neighbourhood or matrix per output), with their conformance cases. MaxPool with indices: both
 * storage orders, padded, strided, dilated and ceil-mode windows (exact: copies and positions). RoiAlign: rois inside, across and outside the image, both
 * modes and coordinate conventions, fixed and adaptive sampling. GridSample: every mode × padding × align_corners in f32
 * and a few in the other float dtypes, grids reaching past [−1, 1] so the padding modes matter (values
 * on a 1/64 grid, exact in every dtype, so nearest meets half-way ties on purpose). Det: sizes 1 to 7
 * (the reference's Leibniz sum against elimination), batched. No WebGPU versions: the runtime places
 * them on the CPU or CUDA.
 */
import type { DType } from '../../core/dtype.js';
import type { ConformanceCase } from '../case-types.js';
import { elementTolerance, type OnnxOpGroup } from './common.js';
import {
  onnxMaxpoolIndicesCpu,
  onnxMaxpoolIndicesCuda,
  onnxMaxpoolIndicesDef,
  onnxMaxpoolIndicesReference,
} from './pool-indices.js';
import { onnxRoiAlignCpu, onnxRoiAlignCuda, onnxRoiAlignDef, onnxRoiAlignReference } from './roi-align.js';
import { onnxDetCpu, onnxDetCuda, onnxDetDef, onnxDetReference } from './det.js';
import {
  GRID_SAMPLE_MODES,
  GRID_SAMPLE_PADDING,
  onnxGridSampleCpu,
  onnxGridSampleCuda,
  onnxGridSampleDef,
  onnxGridSampleReference,
} from './grid-sample.js';

/** n points in [−1.6, 1.6] on a 1/64 grid, from a fixed linear congruential sequence. */
function gridValues(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return (Math.floor((s / 2 ** 31) * 205) - 102) / 64;
  });
}

function gridSampleCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const add = (dtype: DType, mode: string, padding: string, align: boolean, seed: number) => {
    const [x, grid] = [
      [2, 3, 5, 6],
      [2, 4, 3, 2],
    ];
    out.push({
      name: `onnx_grid_sample ${dtype} ${mode} ${padding}${align ? ' align_corners' : ''}`,
      op: 'onnx_grid_sample',
      args: {
        x: { shape: x, dtype },
        grid: { shape: grid, dtype, values: gridValues(48, seed) },
        y: { shape: [2, 3, 4, 3], dtype },
      },
      scalars: { mode, padding, alignCorners: align },
      ...(mode === 'nearest' ? { rtol: 0, atol: 0 } : elementTolerance(dtype, mode === 'cubic' ? 40 : 8)),
    });
  };
  let seed = 1;
  for (const mode of GRID_SAMPLE_MODES)
    for (const padding of GRID_SAMPLE_PADDING)
      for (const align of [false, true]) add('f32', mode, padding, align, seed++);
  add('f64', 'cubic', 'reflection', false, 99);
  add('f16', 'linear', 'border', true, 100);
  add('bf16', 'nearest', 'zeros', false, 101);
  return out;
}

const ROIS = [0.5, 1, 6, 7, -2, -1, 4, 3.5, 3, 2, 10, 9, 1, 1, 1.5, 1.25, -3, -3, -1.5, -2];

function roiAlignCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const add = (dtype: DType, mode: string, halfPixel: boolean, samplingRatio: number, spatialScale: number) =>
    out.push({
      name: `onnx_roi_align ${dtype} ${mode}${halfPixel ? ' half_pixel' : ''} ratio ${samplingRatio} scale ${spatialScale}`,
      op: 'onnx_roi_align',
      args: {
        x: { shape: [2, 3, 8, 9], dtype },
        rois: { shape: [5, 4], dtype, values: ROIS },
        batchIndices: { shape: [5], dtype: 'i32', values: [0, 1, 1, 0, 1] },
        y: { shape: [5, 3, 3, 4], dtype },
      },
      scalars: { mode, halfPixel, samplingRatio, spatialScale },
      ...elementTolerance(dtype, 4),
    });
  for (const mode of ['avg', 'max']) for (const halfPixel of [false, true]) add('f32', mode, halfPixel, 2, 1);
  add('f32', 'avg', true, 0, 1);
  add('f64', 'avg', false, 0, 0.5);
  add('f16', 'max', true, 3, 1);
  add('bf16', 'avg', true, 2, 0.5);
  return out;
}

function maxpoolIndicesCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const add = (
    dtype: DType,
    label: string,
    x: number[],
    y: number[],
    scalars: Record<string, string | number | boolean>,
  ) =>
    out.push({
      name: `onnx_maxpool_indices ${dtype} ${label}`,
      op: 'onnx_maxpool_indices',
      args: { x: { shape: x, dtype }, y: { shape: y, dtype }, indices: { shape: y, dtype: 'i32' } },
      scalars,
      rtol: 0,
      atol: 0,
    });
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
    add(dtype, '3x3 s2 p1 ceil', [2, 3, 7, 8], [2, 3, 4, 5], {
      kernel: '3,3',
      strides: '2,2',
      pads: '1,1,1,1',
      ceilMode: true,
    });
    add(dtype, '2x2 d2 column-major', [1, 2, 6, 5], [1, 2, 4, 3], {
      kernel: '2,2',
      dilations: '2,2',
      storageOrder: 1,
    });
  }
  return out;
}

function detCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const)
    for (const shape of [
      [3, 3],
      [2, 4, 4],
      [5, 1, 1],
      [2, 1, 6, 6],
      [7, 7],
    ]) {
      const n = shape[shape.length - 1]!;
      out.push({
        name: `onnx_det ${dtype} [${shape.join(',')}]`,
        op: 'onnx_det',
        args: { x: { shape, dtype }, y: { shape: shape.slice(0, -2), dtype } },
        scalars: {},
        // Elimination in double against the permutation sum: the one rounding to the dtype, and
        // cancellation in the f64 sums (n! terms of products ≤ 1).
        ...elementTolerance(dtype, 2),
        ...(dtype === 'f64' ? { rtol: 1e-12, atol: 1e-12 * n } : {}),
      });
    }
  return out;
}

export const onnxSampleGroup: OnnxOpGroup = {
  name: 'onnx-sample',
  defs: [onnxGridSampleDef, onnxRoiAlignDef, onnxMaxpoolIndicesDef, onnxDetDef],
  impls: [
    { op: 'onnx_grid_sample', backend: 'cpu', impl: onnxGridSampleCpu },
    { op: 'onnx_grid_sample', backend: 'cuda', impl: onnxGridSampleCuda },
    { op: 'onnx_roi_align', backend: 'cpu', impl: onnxRoiAlignCpu },
    { op: 'onnx_roi_align', backend: 'cuda', impl: onnxRoiAlignCuda },
    { op: 'onnx_maxpool_indices', backend: 'cpu', impl: onnxMaxpoolIndicesCpu },
    { op: 'onnx_maxpool_indices', backend: 'cuda', impl: onnxMaxpoolIndicesCuda },
    { op: 'onnx_det', backend: 'cpu', impl: onnxDetCpu },
    { op: 'onnx_det', backend: 'cuda', impl: onnxDetCuda },
  ],
  references: {
    onnx_grid_sample: onnxGridSampleReference,
    onnx_roi_align: onnxRoiAlignReference,
    onnx_maxpool_indices: onnxMaxpoolIndicesReference,
    onnx_det: onnxDetReference,
  },
  cases: () => [...gridSampleCases(), ...roiAlignCases(), ...maxpoolIndicesCases(), ...detCases()],
};
