/**
 * WGSL cast between f64 and f32. WGSL has no f64, but both directions are bit manipulations on the
 * two 32-bit words of an f64 (little-endian: low word first): widening is exact (f32 subnormals are
 * normalized with countLeadingZeros), narrowing rounds to nearest even on the integer significand —
 * overflow to ±inf, f32 subnormals, underflow to ±0, NaN kept NaN — as Math.fround does. Other f64
 * casts (to f16/bf16 would round twice through f32; integers) are declined.
 */
import type { WgslDispatch } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN } from '../common/webgpu.js';

const F32_TO_F64 = `fn widen(b: u32) -> vec2<u32> {
  let s = b & 0x80000000u;
  let e = (b >> 23u) & 0xffu;
  var m = b & 0x7fffffu;
  var e64 = e + 896u;
  if (e == 0xffu) {
    e64 = 0x7ffu;
  } else if (e == 0u) {
    if (m == 0u) { return vec2<u32>(0u, s); }
    let shift = countLeadingZeros(m) - 8u;
    m = (m << shift) & 0x7fffffu;
    e64 = 897u - shift;
  }
  return vec2<u32>(m << 29u, s | (e64 << 20u) | (m >> 3u));
}
`;

const F64_TO_F32 = `fn narrow(lo: u32, hi: u32) -> u32 {
  let s = hi & 0x80000000u;
  let e = (hi >> 20u) & 0x7ffu;
  let mh = hi & 0xfffffu;
  if (e == 0x7ffu) {
    if ((mh | lo) != 0u) { return s | 0x7fc00000u | (mh << 3u) | (lo >> 29u); }
    return s | 0x7f800000u;
  }
  if (e == 0u) { return s; }
  let ex = i32(e) - 1023;
  if (ex > 127) { return s | 0x7f800000u; }
  // The top 32 bits of the 53-bit significand, and whether any bit below them is set.
  let sig = 0x80000000u | (mh << 11u) | (lo >> 21u);
  let sticky = (lo & 0x1fffffu) != 0u;
  // Right shift to 24 significant bits (normal) or fewer (subnormal results).
  let sh = 8 + max(0, -126 - ex);
  if (sh > 32) { return s; }
  var keep = 0u;
  var rem = sig;
  var half = 0x80000000u;
  if (sh < 32) {
    keep = sig >> u32(sh);
    rem = sig & ((1u << u32(sh)) - 1u);
    half = 1u << u32(sh - 1);
  }
  if (rem > half || (rem == half && (sticky || (keep & 1u) == 1u))) { keep += 1u; }
  if (ex < -126) { return s | keep; }
  var be = u32(ex + 127);
  if (keep == 0x1000000u) { keep = keep >> 1u; be += 1u; }
  if (be >= 255u) { return s | 0x7f800000u; }
  return s | (be << 23u) | (keep & 0x7fffffu);
}
`;

export function castF64Wgsl(toF64: boolean): string {
  const body = toF64
    ? `if (i >= P.n) { return; }
  let w = widen(X[i]);
  Y[2u * i] = w.x;
  Y[2u * i + 1u] = w.y;`
    : `if (i >= P.n) { return; }
  Y[i] = narrow(X[2u * i], X[2u * i + 1u]);`;
  return `struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${toF64 ? F32_TO_F64 : F64_TO_F32}${LINEAR_MAIN}
  ${body}
}
`;
}

/** One invocation per element of an f32 <-> f64 cast of n elements. */
export function castF64Step(toF64: boolean, n: number): WgslDispatch {
  return {
    kind: 'dispatch',
    wgsl: castF64Wgsl(toF64),
    entry: 'main',
    bind: [0, 1],
    uniforms: [{ type: 'u32', value: n }],
    workgroups: { linear: Math.ceil(n / 256) },
  };
}
