/**
 * GridSample (opsets 16–21, 4-d input): on onnx_grid_sample; the float64 evaluation is the kernel's
 * reference (written from ONNX's reference implementation, and checked against ONNX's node tests).
 */
import type { RefArg } from '../../kernels/common/reference.js';
import { onnxGridSampleReference } from '../../kernels/onnx/grid-sample.js';
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

export const SAMPLING_OPS: Record<string, OpImpl> = { GridSample: gridSampleImpl };
