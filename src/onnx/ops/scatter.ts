/**
 * ScatterElements (and opset 9–10 Scatter) and ScatterND, with reduction none / add / mul (opset 16)
 * and max / min (opset 18): on device a copy of data into the output, then onnx_scatter_elements /
 * onnx_scatter_nd on it; on the host the kernels' float64 references (rank ≤ 6).
 */
import type { Scalars } from '../../devices/device.js';
import type { RefArg } from '../../kernels/common/reference.js';
import { onnxScatterElementsReference, onnxScatterNdReference } from '../../kernels/onnx/scatter.js';
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { roundTo } from '../host-tensor.js';
import { fail, inp, make, normAxis, same } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function refArg(dims: readonly number[], data: Float64Array, float = true): RefArg {
  return { desc: { shape: [...dims], dtype: float ? 'f64' : 'i32', bytes: 0 }, values: data };
}

function scalarsOf(c: OpCall, elements: boolean): Scalars {
  const reduction = c.attrs.string('reduction', 'none');
  if (!['none', 'add', 'mul', 'max', 'min'].includes(reduction))
    throw fail(c, `reduction ${reduction} is not supported`, 'TANDEM_ERR_UNSUPPORTED');
  const ranks = [0, 1, 2].map((i) => inp(c, i).dims.length);
  if (ranks.some((r) => r > MAX_RANK))
    throw fail(c, `ranks above ${MAX_RANK} are not supported`, 'TANDEM_ERR_UNSUPPORTED');
  if (!elements) return { reduction };
  return { reduction, axis: normAxis(c, c.attrs.int('axis', 0), ranks[0]!) };
}

function scatterImpl(elements: boolean): OpImpl {
  const kernel = elements ? 'onnx_scatter_elements' : 'onnx_scatter_nd';
  const reference = elements ? onnxScatterElementsReference : onnxScatterNdReference;
  return {
    infer: (c) => {
      scalarsOf(c, elements);
      return [same(c)];
    },
    evaluate: (c, x) => {
      const [data, idx, upd] = [x[0]!, x[1]!, x[2]!];
      for (const v of idx.data) {
        // Host values are checked here; the kernels skip an out-of-range index.
        if (!Number.isInteger(v)) throw fail(c, `index ${v} is not an integer`);
      }
      const y = reference(
        {
          y: refArg(data.dims, data.data),
          indices: refArg(idx.dims, idx.data, false),
          updates: refArg(upd.dims, upd.data),
        },
        scalarsOf(c, elements),
      ).y!;
      return [
        make(
          data.type,
          data.dims,
          y.map((v) => roundTo(data.type, v)),
        ),
      ];
    },
    lower: (c, t) => {
      const y = t.output(0);
      t.submit('copy', { x: t.input(0), y });
      t.submit(kernel, { indices: t.input(1), updates: t.input(2), y }, scalarsOf(c, elements));
    },
  };
}

export const SCATTER_OPS: Record<string, OpImpl> = {
  Scatter: scatterImpl(true),
  ScatterElements: scatterImpl(true),
  ScatterND: scatterImpl(false),
};
