/**
 * WGSL reduce (sum, max, mean) over one axis or all elements. x is seen as [outer, len, inner]
 * (params.ts); one workgroup of 256 per output strides over `len`, then combines in workgroup memory.
 * Accumulation is f32. f16 is native with shader-f16; otherwise f16 and bf16 are packed two per u32 word
 * (common/webgpu.ts), and since neighbouring outputs then share a word, each result is written into
 * its half with atomicAnd + atomicOr (disjoint bits, so any interleaving is right). One shape of kernel
 * covers reduce-all (a single
 * workgroup) and per-axis reductions (many); a two-pass reduce-all for very large tensors is left for
 * when a workload needs it.
 */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, floatStorage, isPacked, packingWgsl } from '../common/webgpu.js';
import { type ReduceOp, reduceLayout } from './params.js';

export function reduceWgsl(op: ReduceOp, t: FloatStorage): string {
  const packed = isPacked(t);
  const isMax = op === 'max';
  // -inf arrives as a uniform: WGSL rejects an infinite constant expression.
  const init = isMax ? 'P.neg_inf' : '0.0';
  const combine = (a: string, b: string): string => (isMax ? `max(${a}, ${b})` : `${a} + ${b}`);
  const load = packed ? 'unpack2(X[e / 2u])[e % 2u]' : 'f32(X[e])';
  const result = op === 'mean' ? 'part[0] / f32(P.len)' : 'part[0]';
  const write = packed
    ? `let shift = (o % 2u) * 16u;
    atomicAnd(&Y[o / 2u], ~(0xffffu << shift));
    atomicOr(&Y[o / 2u], bits16(${result}) << shift);`
    : `Y[o] = ${t}(${result});`;
  return `${t === 'f16' ? 'enable f16;\n' : ''}struct Params { outer: u32, len: u32, inner: u32, neg_inf: f32 }
@group(0) @binding(0) var<storage, read> X: array<${packed ? 'u32' : t}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${packed ? 'atomic<u32>' : t}>;
@group(0) @binding(2) var<uniform> P: Params;
var<workgroup> part: array<f32, 256>;
${isPacked(t) ? packingWgsl(t) : ''}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = wid.y * nwg.x + wid.x;
  // Every invocation reaches the barriers below, so out-of-range workgroups only skip the store.
  let live = o < P.outer * P.inner;
  let base = (o / P.inner) * P.len * P.inner + o % P.inner;
  var acc = ${init};
  if (live) {
    for (var j = lid; j < P.len; j = j + 256u) {
      let e = base + j * P.inner;
      acc = ${combine('acc', load)};
    }
  }
  part[lid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (lid < s) { part[lid] = ${combine('part[lid]', 'part[lid + s]')}; }
    workgroupBarrier();
  }
  if (live && lid == 0u) {
    ${write}
  }
}
`;
}

export const reduceWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 && args[0]!.dtype === args[1]!.dtype && floatStorage(args[0]!.dtype, f) !== undefined,
  plan(args, scalars, f) {
    const x = args[0]!;
    const l = reduceLayout(x.shape, scalars);
    return [
      {
        kind: 'dispatch',
        wgsl: reduceWgsl(l.op, floatStorage(x.dtype, f)!),
        entry: 'main',
        bind: [0, 1],
        uniforms: [
          { type: 'u32', value: l.outer },
          { type: 'u32', value: l.len },
          { type: 'u32', value: l.inner },
          { type: 'f32', value: -Infinity },
        ],
        workgroups: { linear: l.outer * l.inner },
      },
    ];
  },
};
