/**
 * WGSL fill for every dtype: the host encodes the value once into a repeating 8-byte pattern (two
 * 32-bit words: an f64 spans both, smaller dtypes repeat inside each), and the shader writes words. So
 * f64, bf16 and u8 tensors — which WGSL cannot compute on — can still be filled here. The last word may
 * run past the tensor's bytes into the allocation's padding (buffers are rounded up to 16 bytes).
 */
import { type DType, bytesPerElement, f32ToBf16, f32ToF16 } from '../../core/dtype.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { fillValue } from './def.js';

export const FILL_WGSL = `struct Params { words: u32, lo: u32, hi: u32 }
@group(0) @binding(0) var<storage, read_write> Y: array<u32>;
@group(0) @binding(1) var<uniform> P: Params;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= P.words) { return; }
  Y[i] = select(P.lo, P.hi, (i & 1u) == 1u);
}
`;

/** The value's bytes repeated over 8 bytes, as two little-endian words. */
export function fillPattern(dtype: DType, value: number): [number, number] {
  const bytes = new DataView(new ArrayBuffer(8));
  const size = bytesPerElement(dtype);
  for (let off = 0; off < 8; off += size) {
    if (dtype === 'f64') bytes.setFloat64(off, value, true);
    else if (dtype === 'f32') bytes.setFloat32(off, value, true);
    else if (dtype === 'f16') bytes.setUint16(off, f32ToF16(value), true);
    else if (dtype === 'bf16') bytes.setUint16(off, f32ToBf16(value), true);
    else if (dtype === 'i32') bytes.setInt32(off, value, true);
    else bytes.setUint8(off, value);
  }
  return [bytes.getUint32(0, true), bytes.getUint32(4, true)];
}

export const fillWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 1,
  plan(args, scalars) {
    const y = args[0]!;
    const [lo, hi] = fillPattern(y.dtype, fillValue(scalars, y.dtype));
    const words = Math.ceil(y.bytes / 4);
    return [
      {
        kind: 'dispatch',
        wgsl: FILL_WGSL,
        entry: 'main',
        bind: [0],
        uniforms: [
          { type: 'u32', value: words },
          { type: 'u32', value: lo },
          { type: 'u32', value: hi },
        ],
        workgroups: { linear: Math.ceil(words / 256) },
      },
    ];
  },
};
