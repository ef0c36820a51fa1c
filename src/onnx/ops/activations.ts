/**
 * Activations with a tensor parameter: PRelu (slope broadcast to x), lowered onto onnx_binary as
 * max(x, 0) + slope·min(x, 0), which equals x < 0 ? slope·x : x (NaN stays NaN) with one rounding.
 */
import { roundTo } from '../host-tensor.js';
import { broadcastDims, broadcastTo, fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function preluDims(c: OpCall): readonly number[] {
  const x = inp(c, 0);
  const dims = broadcastDims(c, x.dims, inp(c, 1).dims);
  if (dims.length !== x.dims.length || dims.some((d, i) => d !== x.dims[i]))
    throw fail(c, `slope [${inp(c, 1).dims.join(', ')}] does not broadcast to x [${x.dims.join(', ')}]`);
  if (!['float', 'double', 'float16', 'bfloat16'].includes(x.type))
    throw fail(c, `element type ${x.type} is not supported`, 'TANDEM_ERR_DTYPE');
  return x.dims;
}

const preluImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: preluDims(c) }],
  evaluate: (c, x) => {
    const dims = preluDims(c);
    const slope = broadcastTo(x[1]!, dims);
    return [
      make(
        x[0]!.type,
        dims,
        x[0]!.data.map((v, i) => (v < 0 ? roundTo(x[0]!.type, slope[i]! * v) : v)),
      ),
    ];
  },
  lower: (c, t) => {
    preluDims(c);
    const [x, y] = [t.input(0), t.output(0)];
    let slope = t.input(1);
    if (slope.dtype !== x.dtype) {
      const cast = t.scratch(slope.shape, x);
      t.submit('cast', { x: slope, y: cast });
      slope = cast;
    }
    const zero = t.scratch([], x);
    t.submit('fill', { y: zero }, { value: 0 });
    const [pos, neg, scaled] = [t.scratch(x.shape, x), t.scratch(x.shape, x), t.scratch(x.shape, x)];
    t.submit('onnx_binary', { a: x, b: zero, c: pos }, { op: 'max' });
    t.submit('onnx_binary', { a: x, b: zero, c: neg }, { op: 'min' });
    t.submit('onnx_binary', { a: neg, b: slope, c: scaled }, { op: 'mul' });
    t.submit('onnx_binary', { a: pos, b: scaled, c: y }, { op: 'add' });
  },
};

export const ACTIVATION_OPS: Record<string, OpImpl> = {
  PRelu: preluImpl,
};
