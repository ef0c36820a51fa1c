#include "lab.cuh"
extern "C" __global__ void __launch_bounds__(128) tdm_attn_dkdv_mma(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale, float scale_log2) {
  // Two stages of (Q, dY) tiles filled by cp.async (the next under the current one's products), with
  // their lse (base 2) and delta; the block's own K, V rows are staged through stage 1 first.
  alignas(16) __shared__ u16 smem[4 * TILE * RS];
  __shared__ float sL[2][TILE];
  __shared__ float sD[2][TILE];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int s0 = blockIdx.y * TILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int C = H * HD, w0 = warp * 16;
  const long long ld = 3LL * C;
  const u16* qb = qkv + (long long)b * T * ld + (long long)h * HD;
  const u16* dyb = dy + (long long)b * T * C + (long long)h * HD;
  const int tiles = (T - s0 + TILE - 1) / TILE;
  // Stage st's tiles for the query tile starting at t0 (cp.async), and that tile's lse (base 2) and delta,
  // read by the first TILE threads into registers so the loads' latency hides under the products.
  auto prefetch = [&](int st, int t0) {
    load_tile_async(smem + st * 2 * TILE * RS, qb, ld, t0, T);
    load_tile_async(smem + (st * 2 + 1) * TILE * RS, dyb, C, t0, T);
  };
  auto stats = [&](int t0, float& l2, float& dl) {
    const int t = t0 + (int)threadIdx.x;
    const bool in = threadIdx.x < TILE && t < T;
    l2 = in ? lse[(long long)bh * T + t] * LOG2E : 0.f;
    dl = in ? delta[(long long)bh * T + t] : 0.f;
  };
  float nextL, nextD;
  stats(s0, nextL, nextD);
  if (threadIdx.x < TILE) {
    sL[0][threadIdx.x] = nextL;
    sD[0][threadIdx.x] = nextD;
  }
  prefetch(0, s0);
  cp_async_commit();
  load_tile(smem + 2 * TILE * RS, qb + C, ld, s0, T);
  load_tile(smem + 3 * TILE * RS, qb + 2 * C, ld, s0, T);
  __syncthreads();
  unsigned ka[KS_D][4], va[KS_D][4];
  load_a(ka, smem + 2 * TILE * RS, w0, g, c);
  load_a(va, smem + 3 * TILE * RS, w0, g, c);
  __syncthreads();
  float dk[NT_D][4], dv[NT_D][4];
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++)
#pragma unroll
    for (int e = 0; e < 4; e++) { dk[nd][e] = 0.f; dv[nd][e] = 0.f; }
  const int keyA = s0 + w0 + g, keyB = keyA + 8;
  for (int it = 0; it < tiles; it++) {
    const int t0 = s0 + it * TILE, st = it & 1;
    if (it + 1 < tiles) {
      prefetch(st ^ 1, t0 + TILE);
      stats(t0 + TILE, nextL, nextD);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile it have landed
    __syncthreads();    // and everyone else's
    const u16* sQ = smem + st * 2 * TILE * RS;
    const u16* sdY = sQ + TILE * RS;
    const float* sLt = sL[st];
    const float* sDt = sD[st];
    float p[NT_T][4], ds[NT_T][4];
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) { p[j][e] = 0.f; ds[j][e] = 0.f; }
    mma_abt_ldsm(p, ka, sQ, lane);
    mma_abt_ldsm(ds, va, sdY, lane);
    const bool diag = t0 == s0;
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int col = j * 8 + 2 * c + (e & 1), t = t0 + col;
        float pv = ex2(fmaf(p[j][e], scale_log2, -sLt[col]));
        if (t >= T || (diag && t < (e < 2 ? keyA : keyB))) pv = 0.f;
        p[j][e] = pv;
        ds[j][e] = pv * (ds[j][e] - sDt[col]);
      }
    mma_pv(dv, p, sdY, lane);
    mma_pv(dk, ds, sQ, lane);
    if (it + 1 < tiles && threadIdx.x < TILE) {
      sL[st ^ 1][threadIdx.x] = nextL;
      sD[st ^ 1][threadIdx.x] = nextD;
    }
    __syncthreads();  // stage st ^ 1's statistics are in; stage st is refilled by the next prefetch
  }
  u16* out = dqkv + (long long)b * T * ld + (long long)h * HD;
  store_rows(out + C, ld, dk, keyA, T, scale, scale, c);
  store_rows(out + 2 * C, ld, dv, keyA, T, 1.f, 1.f, c);
}
