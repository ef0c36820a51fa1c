#include "lab.cuh"
#define FQ (2 * TILE)
#define MT 2
template <bool MASK>
static __device__ __forceinline__ void fwd_tile(float (*o)[NT_D][4], float (*m)[2], float (*l)[2], unsigned (*qa)[KS_D][4],
    const u16* sK, const u16* sV, int k0, int row0, float sl2, int lane) {
  const int lr = lane & 7, lm = lane >> 3, c = lane & 3;
  float s[MT][NT_T][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int j = 0; j < NT_T; j++) { s[mt][j][0] = 0.f; s[mt][j][1] = 0.f; s[mt][j][2] = 0.f; s[mt][j][3] = 0.f; }
#pragma unroll
  for (int j = 0; j < NT_T; j++)
#pragma unroll
    for (int kk = 0; kk < KS_D; kk += 2) {
      unsigned kb[4];
      ldsm_x4(kb, sK + (j * 8 + lr) * RS + kk * 16 + lm * 8);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma(s[mt][j], qa[mt][kk], kb[0], kb[1]);
        mma(s[mt][j], qa[mt][kk + 1], kb[2], kb[3]);
      }
    }
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
    for (int j = 0; j < NT_T; j++) {
      if (MASK) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = k0 + j * 8 + 2 * c + (e & 1);
          if (key > row0 + 16 * mt + (e < 2 ? 0 : 8)) s[mt][j][e] = NEG_INF;
        }
      }
      mx0 = fmaxf(mx0, fmaxf(s[mt][j][0], s[mt][j][1]));
      mx1 = fmaxf(mx1, fmaxf(s[mt][j][2], s[mt][j][3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 2));
    const float n0 = fmaxf(m[mt][0], mx0 * sl2), n1 = fmaxf(m[mt][1], mx1 * sl2);
    const float c0 = ex2(m[mt][0] - n0), c1 = ex2(m[mt][1] - n1);
    m[mt][0] = n0;
    m[mt][1] = n1;
    float r0 = 0.f, r1 = 0.f;
#pragma unroll
    for (int j = 0; j < NT_T; j++) {
      s[mt][j][0] = ex2(fmaf(s[mt][j][0], sl2, -n0));
      s[mt][j][1] = ex2(fmaf(s[mt][j][1], sl2, -n0));
      s[mt][j][2] = ex2(fmaf(s[mt][j][2], sl2, -n1));
      s[mt][j][3] = ex2(fmaf(s[mt][j][3], sl2, -n1));
      r0 += s[mt][j][0] + s[mt][j][1];
      r1 += s[mt][j][2] + s[mt][j][3];
    }
    l[mt][0] = l[mt][0] * c0 + r0;
    l[mt][1] = l[mt][1] * c1 + r1;
#pragma unroll
    for (int nd = 0; nd < NT_D; nd++) { o[mt][nd][0] *= c0; o[mt][nd][1] *= c0; o[mt][nd][2] *= c1; o[mt][nd][3] *= c1; }
  }
#pragma unroll
  for (int kk = 0; kk < KS_T; kk++) {
    unsigned pa[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      pa[mt][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int nd = 0; nd < NT_D; nd += 2) {
      unsigned vb[4];
      ldsm_x4_trans(vb, sV + (kk * 16 + lr + (lm & 1) * 8) * RS + nd * 8 + (lm >> 1) * 8);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma(o[mt][nd], pa[mt], vb[0], vb[1]);
        mma(o[mt][nd + 1], pa[mt], vb[2], vb[3]);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) tdm_attn_fwd_mma(const u16* __restrict__ qkv, u16* __restrict__ y,
    float* __restrict__ lse, int T, int H, float scale_log2) {
  alignas(16) __shared__ u16 smem[2 * FQ * RS];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * FQ;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int C = H * HD, w0 = warp * 32;
  const long long ld = 3LL * C;
  const u16* qb = qkv + (long long)b * T * ld + (long long)h * HD;
  load_tile_async(smem, qb + C, ld, 0, T);
  load_tile_async(smem + TILE * RS, qb + 2 * C, ld, 0, T);
  cp_async_commit();
  load_rows(smem + FQ * RS, qb, ld, q0, FQ, T);
  __syncthreads();
  unsigned qa[MT][KS_D][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) load_a(qa[mt], smem + FQ * RS, w0 + 16 * mt, g, c);
  __syncthreads();
  float o[MT][NT_D][4];
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
#pragma unroll
    for (int nd = 0; nd < NT_D; nd++) { o[mt][nd][0] = 0.f; o[mt][nd][1] = 0.f; o[mt][nd][2] = 0.f; o[mt][nd][3] = 0.f; }
    m[mt][0] = NEG_INF; m[mt][1] = NEG_INF; l[mt][0] = 0.f; l[mt][1] = 0.f;
  }
  const int row0 = q0 + w0 + g;
  const int tiles = (min(q0 + FQ, T) - 1) / TILE + 1;
  for (int kt = 0; kt < tiles; kt++) {
    const int k0 = kt * TILE;
    if (kt + 1 < tiles) {
      u16* next = smem + ((kt + 1) & 1) * FQ * RS;
      load_tile_async(next, qb + C, ld, k0 + TILE, T);
      load_tile_async(next + TILE * RS, qb + 2 * C, ld, k0 + TILE, T);
    }
    cp_async_commit();
    cp_async_wait_1();
    __syncthreads();
    const u16* sK = smem + (kt & 1) * FQ * RS;
    const u16* sV = sK + TILE * RS;
    if (k0 <= q0 + w0 + 31) {
      if (k0 + TILE - 1 > q0 + w0 || k0 + TILE > T) fwd_tile<true>(o, m, l, qa, sK, sV, k0, row0, scale_log2, lane);
      else fwd_tile<false>(o, m, l, qa, sK, sV, k0, row0, scale_log2, lane);
    }
    __syncthreads();
  }
  u16* yb = y + (long long)b * T * C + (long long)h * HD;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float l0 = l[mt][0], l1 = l[mt][1];
    l0 += __shfl_xor_sync(FULL, l0, 1);
    l0 += __shfl_xor_sync(FULL, l0, 2);
    l1 += __shfl_xor_sync(FULL, l1, 1);
    l1 += __shfl_xor_sync(FULL, l1, 2);
    const int rowA = row0 + 16 * mt, rowB = rowA + 8;
    store_rows(yb, C, o[mt], rowA, T, 1.f / l0, 1.f / l1, c);
    if (c == 0) {
      if (rowA < T) lse[(long long)bh * T + rowA] = (m[mt][0] + log2f(l0)) * LN2;
      if (rowB < T) lse[(long long)bh * T + rowB] = (m[mt][1] + log2f(l1)) * LN2;
    }
  }
}
