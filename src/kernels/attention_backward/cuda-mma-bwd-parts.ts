/**
 * Kernel text the tensor-core backward kernels of one 64-key block per block share: the two-kernel
 * backward's dkdv (cuda-mma-dkdv-dq.ts) and the single pass (cuda-mma-bwd.ts, in halves
 * cuda-mma-bwd-halves.ts). Each has a block of 4 warps of 16 keys, two stages of (Q, dY) tiles in smem
 * (stage st at smem + st · 2 · TILE · RS, dY's tile after Q's) and their lse (base 2) and delta in
 * sL[2][TILE], sD[2][TILE]; the pieces below run in this order.
 */
import { blockSetup, tileIndex } from '../attention/cuda-mma-common.js';

/**
 * The stages' statistics sL, sD, the block's indices (key tile s0 = tile · TILE), qb and dY's base dyb for its
 * batch and head.
 */
export const KEY_BLOCK_SETUP = `  alignas(16) __shared__ float sL[2][TILE];
  alignas(16) __shared__ float sD[2][TILE];
${blockSetup('const int s0 = tile * TILE;', 16, 'TILE')}
  const u16* dyb = dy + (long long)b * T * C + (long long)h * HD;`;

/**
 * The query tiles from the diagonal on: `prefetch` and `stats` of one, stage 0's (Q, dY) copies begun
 * (committed) and its statistics stored; `load` is the cp.async tile loader (load_tile's signature).
 */
export const keyBlockPipeline = (load: string): string => `  const int tiles = (T - s0 + TILE - 1) / TILE;
  // Stage st's tiles for the query tile starting at t0 (cp.async), and that tile's lse (base 2) and delta,
  // read by the first TILE threads into registers so the loads' latency hides under the products.
  auto prefetch = [&](int st, int t0) {
    ${load}(smem + st * 2 * TILE * RS, qb, ld, t0, T);
    ${load}(smem + (st * 2 + 1) * TILE * RS, dyb, C, t0, T);
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
  cp_async_commit();`;

/** The block's K and V rows staged in sK, sV (plain loads) and the warp's A fragments of them in ka, va. */
export const keyFragments = (sK: string, sV: string): string => `  load_tile(${sK}, qb + C, ld, s0, T);
  load_tile(${sV}, qb + 2 * C, ld, s0, T);
  __syncthreads();
  unsigned ka[KS_D][4], va[KS_D][4];
  load_a(ka, ${sK}, w0, g, c);
  load_a(va, ${sV}, w0, g, c);`;

/**
 * dK, dV zeroed and the loop over the query tiles opened: the next tile's prefetch and statistics issued,
 * this one's awaited (the barrier also orders every earlier shared-memory store before its reads), and
 * its stage sQ, sdY, sLt, sDt named.
 */
export const KEY_LOOP_HEAD = `  float dk[NT_D][4], dv[NT_D][4];
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
    const float* sDt = sD[st];`;

/**
 * Two 16 x 64 score products of the warp's rows over a whole tile: x = xa · xsᵀ and y = ya · ysᵀ (A
 * fragments in registers, 64-row tiles in shared memory), into accumulators declared and zeroed here.
 */
export const scorePair = (x: string, xa: string, xs: string, y: string, ya: string, ys: string): string =>
  `    float ${x}[NT_T][4], ${y}[NT_T][4];
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) { ${x}[j][e] = 0.f; ${y}[j][e] = 0.f; }
    mma_abt(${x}, ${xa}, ${xs}, lane);
    mma_abt(${y}, ${ya}, ${ys}, lane);`;

/** Sᵀ = K·Qᵀ into p and dPᵀ = V·dYᵀ into ds for the whole query tile, from the A fragments ka, va. */
export const KEY_TILE_PRODUCTS = `${scorePair('p', 'ka', 'sQ', 'ds', 'va', 'sdY')}
    const bool diag = t0 == s0;`;

/** The next stage's statistics stored, the loop closed, and dK (times scale) and dV stored. */
export const KEY_LOOP_TAIL = `    if (it + 1 < tiles && threadIdx.x < TILE) {
      sL[st ^ 1][threadIdx.x] = nextL;
      sD[st ^ 1][threadIdx.x] = nextD;
    }
    __syncthreads();  // stage st ^ 1's statistics are in; stage st (and the single pass's dSᵀ) is rewritten next
  }
  u16* out = dqkv + (long long)b * T * ld + (long long)h * HD;
  store_rows(out + C, ld, dk, keyA, T, scale, scale, c);
  store_rows(out + 2 * C, ld, dv, keyA, T, 1.f, 1.f, c);`;

/**
 * delta[bh, t] = Σ dY ⊙ Y over the head's columns for one head's 64 rows a block (tileIndex): HD / 8
 * lanes a row (16-byte loads; a warp a row with 2-byte loads ran at 1.3 TB/s), the row sum by shuffles.
 * `alsoInRow` runs for each row segment in range, with its element offset `off` (the single pass zeroes
 * its dQ accumulator there). Needs dy, y, delta, T, H.
 */
export const deltaRows = (alsoInRow: string): string => `${tileIndex('TILE')}
  const int b = bh / H, h = bh - b * H;
  const int C = H * HD, t0 = tile * TILE;
  constexpr int LPR = HD / 8;  // lanes per row
  for (int e = threadIdx.x; e < TILE * LPR; e += blockDim.x) {
    const int r = e / LPR, col = (e - r * LPR) * 8, t = t0 + r;
    float sum = 0.f;
    if (t < T) {
      const long long off = ((long long)b * T + t) * C + h * HD + col;
      const tdm_v4 a = *(const tdm_v4*)(dy + off), o = *(const tdm_v4*)(y + off);
      const unsigned av[4] = {a.x, a.y, a.z, a.w}, ov[4] = {o.x, o.y, o.z, o.w};
#pragma unroll
      for (int i = 0; i < 4; i++) sum += h2f_lo(av[i]) * h2f_lo(ov[i]) + h2f_hi(av[i]) * h2f_hi(ov[i]);
${alsoInRow}
    }
#pragma unroll
    for (int o = 1; o < LPR; o <<= 1) sum += __shfl_xor_sync(FULL, sum, o);
    if (t < T && col == 0) delta[(long long)bh * T + t] = sum;
  }`;
