/**
 * Philox4x32-10 and Box–Muller in CUDA C and WGSL. Both produce the same 32-bit words as
 * workloads/risk/philox.ts for the same (counter, key), and the same uniforms (24-bit, exact in f32):
 * only the transcendental functions differ between devices, by a few ulps.
 */

export const PHILOX_CUDA = `
static __device__ __forceinline__ uint4 tdm_philox(uint4 c, unsigned k0, unsigned k1) {
#pragma unroll
  for (int r = 0; r < 10; r++) {
    if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    const unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
  }
  return c;
}
// (2*(x>>9)+1) * 2^-24: 24 significant bits, exact in float, never 0 or 1.
static __device__ __forceinline__ float tdm_u01(unsigned x) { return (float)(((x >> 9) << 1) | 1u) * 5.9604644775390625e-8f; }
// Box-Muller with the angle in [-pi, pi) where the fast sincos is accurate. The max() keeps the fast
// log's rounding from making -2 log(u) negative for u just below 1.
static __device__ __forceinline__ void tdm_boxmuller(unsigned a, unsigned b, float& z0, float& z1) {
  const float r = sqrtf(fmaxf(-2.0f * __logf(tdm_u01(a)), 0.0f));
  float s, c;
  __sincosf(6.283185307179586f * (tdm_u01(b) - 0.5f), &s, &c);
  z0 = r * c; z1 = r * s;
}
// Sums a per-thread triple over the block in double and writes it as row blockIdx.x of out.
template <typename T>
static __device__ __forceinline__ void tdm_block_sum3(T* out, double a, double b, double c) {
  __shared__ double sh[3][32];
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_down_sync(0xffffffffu, a, o);
    b += __shfl_down_sync(0xffffffffu, b, o);
    c += __shfl_down_sync(0xffffffffu, c, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { sh[0][warp] = a; sh[1][warp] = b; sh[2][warp] = c; }
  __syncthreads();
  if (warp == 0) {
    const int nw = blockDim.x >> 5;
    a = lane < nw ? sh[0][lane] : 0.0; b = lane < nw ? sh[1][lane] : 0.0; c = lane < nw ? sh[2][lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) {
      a += __shfl_down_sync(0xffffffffu, a, o);
      b += __shfl_down_sync(0xffffffffu, b, o);
      c += __shfl_down_sync(0xffffffffu, c, o);
    }
    if (lane == 0) { out[3 * blockIdx.x] = (T)a; out[3 * blockIdx.x + 1] = (T)b; out[3 * blockIdx.x + 2] = (T)c; }
  }
}
`;

export const PHILOX_WGSL = `
fn tdm_mulhilo(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu; let ah = a >> 16u; let bl = b & 0xffffu; let bh = b >> 16u;
  let ll = al * bl; let lh = al * bh; let hl = ah * bl; let hh = ah * bh;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return vec2<u32>(hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u), a * b);
}
fn tdm_philox(c0: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
  var c = c0; var k = key;
  for (var r = 0u; r < 10u; r++) {
    if (r > 0u) { k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u); }
    let p0 = tdm_mulhilo(0xD2511F53u, c.x);
    let p1 = tdm_mulhilo(0xCD9E8D57u, c.z);
    c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
  }
  return c;
}
fn tdm_u01(x: u32) -> f32 { return f32(((x >> 9u) << 1u) | 1u) * 5.9604644775390625e-8; }
fn tdm_boxmuller(a: u32, b: u32) -> vec2<f32> {
  let r = sqrt(max(-2.0 * log(tdm_u01(a)), 0.0));
  let t = 6.283185307179586 * (tdm_u01(b) - 0.5);
  return vec2<f32>(r * cos(t), r * sin(t));
}
`;
