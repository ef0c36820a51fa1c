/** Det (opsets 11–21): on onnx_det; the float64 evaluation is the kernel's reference (a permutation sum). */
import { MAX_DET_N, onnxDetReference } from '../../kernels/onnx/det.js';
import { numelOf, roundTo } from '../host-tensor.js';
import { fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function detDims(c: OpCall): number[] {
  const d = inp(c, 0).dims;
  const n = d[d.length - 1];
  if (d.length < 2 || d[d.length - 2] !== n)
    throw fail(c, `the input must end in a square [n, n], got [${d.join(', ')}]`);
  if (n! > MAX_DET_N)
    throw fail(
      c,
      `matrices larger than ${MAX_DET_N}×${MAX_DET_N} (op Det, domain ai.onnx, opset ${c.opset}) are not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  return d.slice(0, -2);
}

const detImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: detDims(c) }],
  evaluate: (c, x) => {
    const dims = detDims(c);
    const r = onnxDetReference(
      {
        x: { desc: { shape: [...x[0]!.dims], dtype: 'f64', bytes: 0 }, values: x[0]!.data },
        y: { desc: { shape: dims, dtype: 'f64', bytes: 0 }, values: new Float64Array(numelOf(dims)) },
      },
      {},
    );
    return [
      make(
        x[0]!.type,
        dims,
        Array.from(r.y!, (v) => roundTo(x[0]!.type, v)),
      ),
    ];
  },
  lower: (_c, t) => t.submit('onnx_det', { x: t.input(0), y: t.output(0) }),
};

export const DET_OPS: Record<string, OpImpl> = { Det: detImpl };
