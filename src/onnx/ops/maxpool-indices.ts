/**
 * MaxPool with its Indices output (1-d and 2-d; storage_order 0 or 1): onnx_maxpool_indices, the
 * int64 positions as i32 on the device. The float64 evaluation is the kernel's reference. Without
 * the Indices output MaxPool stays on onnx_pool (conv.ts).
 */
import type { RefArg } from '../../kernels/common/reference.js';
import { onnxMaxpoolIndicesReference } from '../../kernels/onnx/pool-indices.js';
import { numelOf, type HostTensor } from '../host-tensor.js';
import { as4d, poolSpec, str } from './conv.js';
import { inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

export const wantsIndices = (c: OpCall): boolean => (c.node.outputs[1] ?? '') !== '';

function scalars(c: OpCall) {
  const { g, ceil } = poolSpec(c);
  return {
    kernel: `${g.kh},${g.kw}`,
    ceilMode: ceil,
    storageOrder: c.attrs.int('storage_order', 0),
    ...str(g),
  };
}

/** [N, C, H, W] views of a 1-d pool's [N, C, L] shapes (H = 1), as the 2-d kernels see them. */
const dims4 = (d: readonly number[]) => (d.length === 3 ? [d[0]!, d[1]!, 1, d[2]!] : [...d]);

export const maxpoolIndicesImpl: OpImpl = {
  infer: (c) => {
    const { dims } = poolSpec(c);
    return [
      { type: inp(c, 0).type, dims },
      { type: 'int64', dims },
    ];
  },
  evaluate: (c, x) => {
    const { dims } = poolSpec(c);
    const arg = (d: readonly number[], data?: Float64Array, dtype: 'f64' | 'i32' = 'f64'): RefArg => ({
      desc: { shape: dims4(d), dtype, bytes: 0 },
      values: data ?? new Float64Array(numelOf(d)),
    });
    const t: HostTensor = x[0]!;
    const r = onnxMaxpoolIndicesReference(
      { x: arg(t.dims, t.data), y: arg(dims), indices: arg(dims, undefined, 'i32') },
      scalars(c),
    );
    return [make(t.type, dims, r.y!), make('int64', dims, r.indices!)];
  },
  lower: (c, t) => {
    const { g } = poolSpec(c);
    const x = as4d(t, t.input(0), g.rank);
    const [y, idx] = [t.output(0), t.output(1)];
    const y4 = g.rank === 2 ? y : t.scratch(dims4(y.shape), y);
    const i4 = g.rank === 2 ? idx : t.scratch(dims4(idx.shape), idx);
    t.submit('onnx_maxpool_indices', { x, y: y4, indices: i4 }, scalars(c));
    if (y4 !== y) t.submit('copy', { x: y4, y });
    if (i4 !== idx) t.submit('copy', { x: i4, y: idx });
  },
};
