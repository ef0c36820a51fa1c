/** GatherND (batch_dims from opset 12) on onnx_gather_nd; int64 indices are i32 on device. */
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { numelOf } from '../host-tensor.js';
import { fail, inp, make, stridesOf } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function gatherNdSpec(c: OpCall) {
  const [d, id] = [inp(c, 0).dims, inp(c, 1).dims];
  const b = c.attrs.int('batch_dims', 0);
  const q = id.length;
  const m = id[q - 1] ?? 0;
  if (d.length < 1 || q < 1 || b < 0 || b >= Math.min(q, d.length) || m < 1 || b + m > d.length)
    throw fail(c, `indices [${id.join(', ')}] do not index data [${d.join(', ')}] with batch_dims ${b}`);
  if (id.slice(0, b).some((v, i) => v !== d[i])) throw fail(c, 'the batch axes of data and indices differ');
  return { b, m, dims: [...id.slice(0, q - 1), ...d.slice(b + m)] };
}

const gatherNdImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: gatherNdSpec(c).dims }],
  evaluate: (c, x) => {
    const { b, m, dims } = gatherNdSpec(c);
    const [data, idx] = [x[0]!, x[1]!];
    const ds = stridesOf(data.dims);
    const slice = numelOf(data.dims.slice(b + m));
    const batchSize = numelOf(data.dims.slice(b));
    const rowsPerBatch = numelOf(idx.dims.slice(b, -1));
    const rows = idx.data.length / m;
    const out = new Float64Array(numelOf(dims));
    for (let r = 0; r < rows; r++) {
      let off = Math.floor(r / rowsPerBatch) * batchSize;
      for (let j = 0; j < m; j++) {
        const n = data.dims[b + j]!;
        const raw = idx.data[r * m + j]!;
        if (raw < -n || raw >= n) throw fail(c, `index ${raw} is out of range for size ${n}`);
        off += (raw < 0 ? raw + n : raw) * ds[b + j]!;
      }
      out.set(data.data.subarray(off, off + slice), r * slice);
    }
    return [make(data.type, dims, out)];
  },
  lower: (c, t) => {
    const { b, dims } = gatherNdSpec(c);
    const ranks = [inp(c, 0).dims.length, inp(c, 1).dims.length, dims.length];
    if (ranks.some((r) => r > MAX_RANK))
      throw fail(c, `ranks above ${MAX_RANK} on device data are not supported`, 'TANDEM_ERR_UNSUPPORTED');
    t.submit('onnx_gather_nd', { data: t.input(0), indices: t.input(1), y: t.output(0) }, { batchDims: b });
  },
};

export const GATHER_ND_OPS: Record<string, OpImpl> = { GatherND: gatherNdImpl };
