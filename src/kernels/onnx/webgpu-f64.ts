/**
 * The few f64 ONNX kernels WGSL can run exactly although it has no f64: an f64 is two u32 words (low
 * word first) and the work is integer arithmetic on them. onnx_binary max/min compare order-preserving
 * 64-bit keys (NaN wins, as on the CPU); onnx_cumsum adds with a software IEEE double addition
 * (round to nearest even, subnormals, infinities, NaN), so each running sum is bit for bit the CPU's
 * double sum in the same order. Everything else on f64 (exp, log, products) stays declined.
 */
import { numel } from '../../core/shape.js';
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { enumScalar } from '../common/scalars.js';
import { LINEAR_MAIN } from '../common/webgpu.js';
import { pad6 } from './common.js';
import { BINARY_OPS } from './elementwise-ops.js';
import { cumsumGeometry } from './scan.js';
import { broadcastStrides } from './shapes.js';
import { array6, F64_ORDER_WGSL, fields6, offsetWgsl, words } from './webgpu-elements.js';
import { linearStep, u32 } from './webgpu-steps.js';

function maxMinWgsl(max: boolean): string {
  return `struct Params { n: u32, ${fields6('d', 'sa', 'sb').join(', ')} }
@group(0) @binding(0) var<storage, read> A: array<u32>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
${F64_ORDER_WGSL}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  ${array6('d')}
  ${array6('sa')}
  ${array6('sb')}
  ${offsetWgsl('i', ['sa', 'sb'])}
  let a = vec2<u32>(A[2u * o_sa], A[2u * o_sa + 1u]);
  let b = vec2<u32>(B[2u * o_sb], B[2u * o_sb + 1u]);
  var pick = select(a, b, ${max ? 'd_less(a, b)' : 'd_less(b, a)'});
  if (d_nan(b)) { pick = b; }
  if (d_nan(a)) { pick = a; }
  C[2u * i] = pick.x;
  C[2u * i + 1u] = pick.y;
}
`;
}

/** onnx_binary max/min on f64 with broadcasting; called by onnxBinaryWebGpu for those dtypes. */
export const onnxBinaryF64WebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars) =>
    args.length === 3 &&
    args.every((a) => a.dtype === 'f64') &&
    (scalars['op'] === 'max' || scalars['op'] === 'min'),
  plan(args, scalars) {
    const op = enumScalar('onnx_binary', scalars, 'op', BINARY_OPS);
    const c = args[2]!.shape;
    const n = numel(c);
    const strides = [0, 1].flatMap((k) => pad6(c, broadcastStrides(args[k]!.shape, c)).strides);
    return linearStep(maxMinWgsl(op === 'max'), n, [0, 1, 2], words([n, ...pad6(c, []).dims, ...strides]));
  },
};

/**
 * d_add(a, b): IEEE double a + b. Significands sit with the leading bit at 62 (10 guard bits below the
 * 52 fraction bits, bit 63 free for the carry); the smaller operand is shifted right with every lost
 * bit jammed into bit 0, so rounding to nearest even at the end is exact (as Berkeley SoftFloat).
 */
const F64_ADD_WGSL = `fn u_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn u_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
fn u_shl(v: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) { return v; }
  if (n >= 32u) { return vec2<u32>(0u, v.x << (n - 32u)); }
  return vec2<u32>(v.x << n, (v.y << n) | (v.x >> (32u - n)));
}
fn u_shr_jam(v: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) { return v; }
  if (n >= 64u) { return vec2<u32>(select(0u, 1u, (v.x | v.y) != 0u), 0u); }
  if (n >= 32u) {
    let k = n - 32u;
    let lost = v.x | select(0u, v.y & ((1u << k) - 1u), k > 0u);
    return vec2<u32>((v.y >> k) | select(0u, 1u, lost != 0u), 0u);
  }
  let lost = v.x & ((1u << n) - 1u);
  return vec2<u32>(((v.x >> n) | (v.y << (32u - n))) | select(0u, 1u, lost != 0u), v.y >> n);
}
fn u_clz(v: vec2<u32>) -> u32 {
  if (v.y != 0u) { return countLeadingZeros(v.y); }
  return 32u + countLeadingZeros(v.x);
}
fn d_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  if (d_nan(a)) { return a | vec2<u32>(0u, 0x00080000u); }
  if (d_nan(b)) { return b | vec2<u32>(0u, 0x00080000u); }
  let ea = (a.y >> 20u) & 0x7ffu;
  let eb = (b.y >> 20u) & 0x7ffu;
  let sa = a.y & 0x80000000u;
  let sb = b.y & 0x80000000u;
  if (ea == 0x7ffu) {
    if (eb == 0x7ffu && sa != sb) { return vec2<u32>(0u, 0xfff80000u); }
    return a;
  }
  if (eb == 0x7ffu) { return b; }
  // Significand with the implicit bit (none for subnormals, whose exponent counts as 1), << 10.
  var ma = u_shl(vec2<u32>(a.x, (a.y & 0xfffffu) | select(0u, 0x100000u, ea != 0u)), 10u);
  var mb = u_shl(vec2<u32>(b.x, (b.y & 0xfffffu) | select(0u, 0x100000u, eb != 0u)), 10u);
  var xa = max(ea, 1u);
  var xb = max(eb, 1u);
  var s = sa;
  var sub = sa != sb;
  // Make |a| >= |b|.
  if (xb > xa || (xb == xa && (mb.y > ma.y || (mb.y == ma.y && mb.x > ma.x)))) {
    let tm = ma; ma = mb; mb = tm;
    let tx = xa; xa = xb; xb = tx;
    s = sb;
  }
  mb = u_shr_jam(mb, xa - xb);
  var m: vec2<u32>;
  var x = xa;
  if (sub) {
    m = u_sub(ma, mb);
    if ((m.x | m.y) == 0u) { return vec2<u32>(0u, 0u); }
    let shift = min(u_clz(m) - 1u, x - 1u);
    m = u_shl(m, shift);
    x -= shift;
  } else {
    m = u_add(ma, mb);
    if ((m.y & 0x80000000u) != 0u) { m = u_shr_jam(m, 1u); x += 1u; }
  }
  // Round the 10 guard bits to nearest even.
  let rem = m.x & 0x3ffu;
  m = u_shr_jam(vec2<u32>(m.x & ~0x3ffu, m.y), 10u);
  if (rem > 0x200u || (rem == 0x200u && (m.x & 1u) == 1u)) { m = u_add(m, vec2<u32>(1u, 0u)); }
  if ((m.y & 0x200000u) != 0u) { m = u_shr_jam(m, 1u); x += 1u; }
  if (x >= 0x7ffu) { return vec2<u32>(0u, s | 0x7ff00000u); }
  let e = select(0u, x, (m.y & 0x100000u) != 0u);
  return vec2<u32>(m.x, s | (e << 20u) | (m.y & 0xfffffu));
}
`;

function cumsumF64Wgsl(exclusive: boolean, reverse: boolean): string {
  const add = 'acc = d_add(acc, vec2<u32>(X[2u * at], X[2u * at + 1u]));';
  const store = 'Y[2u * at] = acc.x;\n    Y[2u * at + 1u] = acc.y;';
  return `struct Params { n: u32, dim: u32, inner: u32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
${F64_ORDER_WGSL}${F64_ADD_WGSL}${LINEAR_MAIN}
  if (i >= P.n) { return; }
  let base = (i / P.inner) * P.dim * P.inner + i % P.inner;
  var acc = vec2<u32>(0u, 0u);
  for (var t = 0u; t < P.dim; t++) {
    let at = base + ${reverse ? '(P.dim - 1u - t)' : 't'} * P.inner;
    ${exclusive ? `${store}\n    ${add}` : `${add}\n    ${store}`}
  }
}
`;
}

/** onnx_cumsum on f64 (one invocation per line); called by onnxCumsumWebGpu for that dtype. */
export const onnxCumsumF64WebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args.length === 2 && args[0]!.dtype === 'f64' && args[1]!.dtype === 'f64',
  plan(args, scalars) {
    const g = cumsumGeometry(args[0]!, scalars);
    const n = g.outer * g.inner;
    const wgsl = cumsumF64Wgsl(g.exclusive, g.reverse);
    return linearStep(wgsl, g.dim === 0 ? 0 : n, [0, 1], [u32(n), u32(g.dim), u32(g.inner)]);
  },
};

/** The raw d_add source, for tests that check it against JavaScript's addition. */
export const F64_ADD_TEST_WGSL = F64_ORDER_WGSL + F64_ADD_WGSL;
