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
// The fast path of the option kernels (mc_european, mc_asian): the same uniforms bit for bit, built
// without an int->float conversion (the conversion unit is a quarter-rate pipe): 1.m (m = x >> 9) minus
// (1 - 2^-24) is exactly (2m + 1) 2^-24, and the approximate PTX transcendentals (.ftz, one MUFU op
// each) replace the IEEE sqrt and the non-ftz intrinsics. lg2 and the 2 ln 2 factor fold into one
// multiply, the angle into one fma on the [1, 2) float.
static __device__ __forceinline__ float tdm_lg2(float x) { float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
static __device__ __forceinline__ float tdm_ex2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
static __device__ __forceinline__ float tdm_sqrt(float x) { float y; asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
static __device__ __forceinline__ float tdm_sin(float x) { float y; asm("sin.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
static __device__ __forceinline__ float tdm_cos(float x) { float y; asm("cos.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
static __device__ __forceinline__ float tdm_one_two(unsigned x) { return __uint_as_float(0x3f800000u | (x >> 9)); }
// Box-Muller as tdm_boxmuller, scaled: returns r*scale in rs and the angle's cosine/sine in c/s, so a
// caller that only needs scale*z pays one multiply per variate.
static __device__ __forceinline__ void tdm_bm_fast(unsigned a, unsigned b, float scale, float& rs, float& c, float& s) {
  const float u = tdm_one_two(a) - 0.99999994f;            // (2(a>>9)+1) 2^-24, exact
  const float r2 = fmaxf(-1.3862943611198906f * tdm_lg2(u), 0.0f); // -2 ln u
  rs = tdm_sqrt(r2) * scale;
  // 2 pi (u_b - 1/2) with u_b = f - (1 - 2^-24), f in [1, 2): 2 pi f - 2 pi (3/2 - 2^-24)
  const float t = fmaf(tdm_one_two(b), 6.283185307179586f, -9.424777586f);
  c = tdm_cos(t); s = tdm_sin(t);
}
// Sums per-thread (sum, sum of squares, count) over the block (warp shuffles, then the warps' sums in
// double) and
// writes it as row 'row' of out.
template <typename T>
static __device__ __forceinline__ void tdm_block_sum3f(T* out, long long row, float a, float b, int c) {
  __shared__ float shf[2][32];
  __shared__ int shc[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
    c += __shfl_xor_sync(0xffffffffu, c, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { shf[0][warp] = a; shf[1][warp] = b; shc[warp] = c; }
  __syncthreads();
  if (threadIdx.x < 3) {
    double t = 0.0;
    const int nw = blockDim.x >> 5;
    for (int w = 0; w < nw; w++) t += threadIdx.x < 2 ? (double)shf[threadIdx.x][w] : (double)shc[w];
    out[3 * row + threadIdx.x] = (T)t;
  }
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
