/**
 * GridSample (opsets 16–21, 4-d input) and RoiAlign (opsets 10–21): on onnx_grid_sample and
 * onnx_roi_align; the float64 evaluations are the kernels' references (written from ONNX's reference
 * implementation, and checked against ONNX's node tests).
 */
import type { RefArg } from '../../kernels/common/reference.js';
import { onnxGridSampleReference } from '../../kernels/onnx/grid-sample.js';
import { onnxRoiAlignReference } from '../../kernels/onnx/roi-align.js';
import type { Scalars } from '../../devices/device.js';
import { numelOf, roundTo } from '../host-tensor.js';
import { fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

/** Opset 16 names the modes bilinear / bicubic, opset 20 linear / cubic: both are read. */
function gridSampleScalars(c: OpCall): Scalars {
  const x = inp(c, 0).dims;
  const grid = inp(c, 1).dims;
  if (x.length !== 4)
    throw fail(
      c,
      `a ${x.length - 2}-d GridSample (op GridSample, domain ai.onnx, opset ${c.opset}, input X rank ${x.length}) is not supported (2-d is)`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  if (grid.length !== 4 || grid[0] !== x[0] || grid[3] !== 2)
    throw fail(c, `grid [${grid.join(', ')}] must be [${x[0]}, H_out, W_out, 2]`);
  const mode = c.attrs.string('mode', c.opset >= 20 ? 'linear' : 'bilinear');
  const modes: Record<string, string> = {
    bilinear: 'linear',
    linear: 'linear',
    bicubic: 'cubic',
    cubic: 'cubic',
    nearest: 'nearest',
  };
  if (!modes[mode])
    throw fail(c, `mode ${mode} is not nearest, (bi)linear or (bi)cubic`, 'TANDEM_ERR_BAD_DATA');
  const padding = c.attrs.string('padding_mode', 'zeros');
  if (!['zeros', 'border', 'reflection'].includes(padding))
    throw fail(c, `padding_mode ${padding} is not zeros, border or reflection`, 'TANDEM_ERR_BAD_DATA');
  return { mode: modes[mode]!, padding, alignCorners: c.attrs.int('align_corners', 0) !== 0 };
}

const outDims = (c: OpCall) => {
  const [x, grid] = [inp(c, 0).dims, inp(c, 1).dims];
  return [x[0]!, x[1]!, grid[1]!, grid[2]!];
};

const gridSampleImpl: OpImpl = {
  infer: (c) => {
    gridSampleScalars(c);
    return [{ type: inp(c, 0).type, dims: outDims(c) }];
  },
  evaluate: (c, x) => {
    const arg = (dims: readonly number[], data?: Float64Array): RefArg => ({
      desc: { shape: [...dims], dtype: 'f64', bytes: 0 },
      values: data ?? new Float64Array(numelOf(dims)),
    });
    const dims = outDims(c);
    const r = onnxGridSampleReference(
      { x: arg(x[0]!.dims, x[0]!.data), grid: arg(x[1]!.dims, x[1]!.data), y: arg(dims) },
      gridSampleScalars(c),
    );
    const type = x[0]!.type;
    return [
      make(
        type,
        dims,
        Array.from(r.y!, (v) => roundTo(type, v)),
      ),
    ];
  },
  lower: (c, t) =>
    t.submit('onnx_grid_sample', { x: t.input(0), grid: t.input(1), y: t.output(0) }, gridSampleScalars(c)),
};

// ---- RoiAlign

/** Opset 16 added coordinate_transformation_mode (default half_pixel); before, the legacy mode. */
function roiAlignScalars(c: OpCall): Scalars {
  const [x, rois, idx] = [inp(c, 0).dims, inp(c, 1).dims, inp(c, 2).dims];
  if (x.length !== 4 || rois.length !== 2 || rois[1] !== 4 || idx.length !== 1 || idx[0] !== rois[0])
    throw fail(c, `X must be [N, C, H, W], rois [R, 4] and batch_indices [R]`);
  const mode = c.attrs.string('mode', 'avg');
  if (mode !== 'avg' && mode !== 'max')
    throw fail(c, `mode ${mode} is not avg or max`, 'TANDEM_ERR_BAD_DATA');
  const ctm = c.attrs.string(
    'coordinate_transformation_mode',
    c.opset >= 16 ? 'half_pixel' : 'output_half_pixel',
  );
  if (ctm !== 'half_pixel' && ctm !== 'output_half_pixel')
    throw fail(c, `coordinate_transformation_mode ${ctm} is not valid`, 'TANDEM_ERR_BAD_DATA');
  return {
    mode,
    halfPixel: ctm === 'half_pixel',
    samplingRatio: c.attrs.int('sampling_ratio', 0),
    spatialScale: c.attrs.float('spatial_scale', 1),
  };
}

const roiDims = (c: OpCall) => [
  inp(c, 1).dims[0]!,
  inp(c, 0).dims[1]!,
  c.attrs.int('output_height', 1),
  c.attrs.int('output_width', 1),
];

const roiAlignImpl: OpImpl = {
  infer: (c) => {
    roiAlignScalars(c);
    return [{ type: inp(c, 0).type, dims: roiDims(c) }];
  },
  evaluate: (c, x) => {
    const arg = (dims: readonly number[], data?: Float64Array, dtype: 'f64' | 'i32' = 'f64'): RefArg => ({
      desc: { shape: [...dims], dtype, bytes: 0 },
      values: data ?? new Float64Array(numelOf(dims)),
    });
    const dims = roiDims(c);
    const r = onnxRoiAlignReference(
      {
        x: arg(x[0]!.dims, x[0]!.data),
        rois: arg(x[1]!.dims, x[1]!.data),
        batchIndices: arg(x[2]!.dims, x[2]!.data, 'i32'),
        y: arg(dims),
      },
      roiAlignScalars(c),
    );
    const type = x[0]!.type;
    return [
      make(
        type,
        dims,
        Array.from(r.y!, (v) => roundTo(type, v)),
      ),
    ];
  },
  lower: (c, t) =>
    t.submit(
      'onnx_roi_align',
      { x: t.input(0), rois: t.input(1), batchIndices: t.input(2), y: t.output(0) },
      roiAlignScalars(c),
    ),
};

export const SAMPLING_OPS: Record<string, OpImpl> = { GridSample: gridSampleImpl, RoiAlign: roiAlignImpl };
