/**
 * Causal attention on tensor cores for f16/bf16 storage and head dims d ∈ {16, 32, 48, 64}
 * (FlashAttention-2's scheme with warp-level mma.sync.m16n8k16, f32 accumulation). A block is 4 warps;
 * each warp owns 16 rows (32 in the forward) of the block's tile and keeps its A operands (q, or k and
 * v, or q and dy) in registers; the other operand's 64-row tile is staged row-major in shared memory
 * (rows padded by 8 elements: the 32-bit Bᵀ fragment loads of 8 groups × 4 lanes hit 32 distinct banks,
 * and ldmatrix.trans reads the B fragments of the products with v, dy, q or k from the same tile).
 * Scores live only in registers: an accumulator fragment of two adjacent 8-column tiles is exactly the
 * A fragment of a 16-wide k step, so P (and dS) are packed to f16/bf16 pairs and fed straight into the
 * next product.
 * Softmax runs in base 2 (scores pre-multiplied by scale·log2 e); lse is stored in base e.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16, g = lane / 4, c = lane % 4):
 *   A 16x16: a0 (g, 2c..2c+1), a1 (g+8, 2c..), a2 (g, 2c+8..), a3 (g+8, 2c+8..)
 *   B 16x8:  b0 (k 2c..2c+1, n g), b1 (k 2c+8.., n g)
 *   C 16x8:  c0 (g, 2c), c1 (g, 2c+1), c2 (g+8, 2c), c3 (g+8, 2c+1)
 * Defines: HD (head dim, a multiple of 16, at most 64), IS_BF16 (1 bf16, 0 f16).
 */

/** The helpers every tensor-core attention kernel shares (and the single-pass backward, cuda-mma-bwd.ts). */
export const MMA_COMMON = `
#define TILE 64
#define RS (HD + 8)
#define NT_T (TILE / 8)
#define KS_T (TILE / 16)
#define NT_D (HD / 8)
#define KS_D (HD / 16)
#define FULL 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f
// ATTN_V1 (opt-in, TANDEM_ATTN_MMA=v1; head dims 32 and 64): the B fragments of S = A·Bᵀ by ldmatrix.x4,
// and exponentials by ex2.approx with the softmax scale folded into one FFMA (the attention lab's
// fwd1/dkdv1/dq1, bench/attention-lab/).
#ifndef ATTN_V1
#define ATTN_V1 0
#endif
typedef unsigned short u16;
struct alignas(16) tdm_v4 { unsigned x, y, z, w; };
#if IS_BF16
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#define CVT_X2 "cvt.rn.bf16x2.f32"
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#define CVT_X2 "cvt.rn.f16x2.f32"
#endif
static __device__ __forceinline__ void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats to one register of two 16-bit values, lo in the low half (cvt puts its first source high).
static __device__ __forceinline__ unsigned pack2(float lo, float hi) {
  unsigned r;
  asm(CVT_X2 " %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
static __device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
// ldmatrix.x4.trans: lane l names row l % 8 of 8x8 matrix l / 8 (16 contiguous bytes in shared memory);
// r[i] gets matrix i transposed in the A/B fragment order: (rows 2c, 2c+1; column g).
static __device__ __forceinline__ void ldsm_x4_trans(unsigned* r, const u16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)) : "memory");
}
// ldmatrix.x4 (no transpose): r[i] = matrix i in the B fragment order of an n-major tile (row g, cols
// 2c, 2c+1): four 32-bit B fragments in one shared-memory instruction instead of four lds32.
static __device__ __forceinline__ void ldsm_x4(unsigned* r, const u16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)) : "memory");
}
// 2^x on the SFU (ex2.approx.ftz: relative error 2^-22, subnormal results flushed to 0): exp2f without
// its range fix-up, far below the error of the 16-bit P it feeds.
static __device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// dst[0] += a, dst[1] += b in global memory (8-byte aligned): one vector reduction on sm_90 with PTX 8.1
// (CUDA 12.1), two scalar ones before (the single-pass backward's dQ accumulation).
static __device__ __forceinline__ void red_add_v2(float* dst, float a, float b) {
#if __CUDA_ARCH__ >= 900 && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 1))
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" :: "l"(dst), "f"(a), "f"(b) : "memory");
#else
  asm volatile("red.global.add.f32 [%0], %1;" :: "l"(dst), "f"(a) : "memory");
  asm volatile("red.global.add.f32 [%0], %1;" :: "l"(dst + 1), "f"(b) : "memory");
#endif
}
// The low / high 16-bit value of a packed pair as f32.
#if IS_BF16
static __device__ __forceinline__ float h2f_lo(unsigned v) { return __uint_as_float(v << 16); }
static __device__ __forceinline__ float h2f_hi(unsigned v) { return __uint_as_float(v & 0xffff0000u); }
#else
static __device__ __forceinline__ float h2f_lo(unsigned v) {
  float f;
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l; }" : "=f"(f) : "r"(v));
  return f;
}
static __device__ __forceinline__ float h2f_hi(unsigned v) {
  float f;
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "r"(v));
  return f;
}
#endif
// 16 bytes global -> shared without a register round trip (sm_80+); bytes = 0 stores zeros.
static __device__ __forceinline__ void cp_async16(void* s, const void* g, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(smem_u32(s)), "l"(g), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most one group (the newest) of this thread's copies is still in flight.
static __device__ __forceinline__ void cp_async_wait_1() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
static __device__ __forceinline__ unsigned lds32(const u16* p) { return *(const unsigned*)p; }
// Rows [r0, r0 + rows) of a matrix whose row t starts at base + t * ld (HD columns) into s[rows][RS];
// rows at or past T are zeros. 16-byte loads: 8 columns per thread per step.
static __device__ __forceinline__ void load_rows(u16* s, const u16* __restrict__ base, long long ld, int r0, int rows, int T) {
  for (int e = threadIdx.x; e < rows * (HD / 8); e += blockDim.x) {
    const int r = e / (HD / 8), c = (e - r * (HD / 8)) * 8, t = r0 + r;
    tdm_v4 v; v.x = 0u; v.y = 0u; v.z = 0u; v.w = 0u;
    if (t < T) v = *(const tdm_v4*)(base + (long long)t * ld + c);
    *(tdm_v4*)(s + r * RS + c) = v;
  }
}
static __device__ __forceinline__ void load_tile(u16* s, const u16* __restrict__ base, long long ld, int r0, int T) {
  load_rows(s, base, ld, r0, TILE, T);
}
// load_tile with cp.async: the copies land while the block computes on the other stage.
static __device__ __forceinline__ void load_tile_async(u16* s, const u16* __restrict__ base, long long ld, int r0, int T) {
  for (int e = threadIdx.x; e < TILE * (HD / 8); e += blockDim.x) {
    const int r = e / (HD / 8), c = (e - r * (HD / 8)) * 8, t = r0 + r;
    const bool in = t < T;
    cp_async16(s + r * RS + c, base + (long long)(in ? t : 0) * ld + c, in ? 16 : 0);
  }
}
// Rows [r0, r0 + rows) of a matrix whose row t starts at base + t * ld (HD columns) into s[rows][RS]
// by cp.async; rows at or past T are zeros.
template <int ROWS, int NTHREADS>
static __device__ __forceinline__ void load_rows_async(u16* s, const u16* __restrict__ base, long long ld, int r0, int T) {
  // Thread i copies 16-byte chunk i % (HD / 8) of rows i / (HD / 8) + k * (NTHREADS / (HD / 8)): one
  // pointer stepped by a fixed stride (no per-row 64-bit products kept live across the key loop).
  constexpr int CPR = HD / 8, STEP = NTHREADS / CPR;
  static_assert(NTHREADS % CPR == 0 && ROWS % STEP == 0, "whole passes");
  const int r = threadIdx.x / CPR, c = (threadIdx.x - r * CPR) * 8;
  const u16* g = base + (long long)(r0 + r) * ld + c;
  const long long gs = (long long)STEP * ld;
  u16* d = s + r * RS + c;
#pragma unroll
  for (int k = 0; k < ROWS / STEP; k++) {
    const bool in = r0 + r + k * STEP < T;
    cp_async16(d + k * STEP * RS, in ? g : base, in ? 16 : 0);
    g += gs;
  }
}

// A fragments of the warp's 16 rows (starting at row w0 of a [TILE][RS] tile), one per 16-wide k step.
static __device__ __forceinline__ void load_a(unsigned (*a)[4], const u16* s, int w0, int g, int c) {
#pragma unroll
  for (int kk = 0; kk < KS_D; kk++) {
    a[kk][0] = lds32(s + (w0 + g) * RS + kk * 16 + 2 * c);
    a[kk][1] = lds32(s + (w0 + g + 8) * RS + kk * 16 + 2 * c);
    a[kk][2] = lds32(s + (w0 + g) * RS + kk * 16 + 8 + 2 * c);
    a[kk][3] = lds32(s + (w0 + g + 8) * RS + kk * 16 + 8 + 2 * c);
  }
}
// acc[j] += A · Bᵀ for the 8 column tiles j of a 64-row tile s (row-major [TILE][RS]): S = Q·Kᵀ and the like.
static __device__ __forceinline__ void mma_abt(float (*acc)[4], unsigned (*a)[4], const u16* s, int lane) {
#if ATTN_V1
  // ldmatrix.x4: lane l names row l % 8 of matrix l / 8 = columns kk·16 + 8·(l / 8): two k steps a load.
  const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
  for (int j = 0; j < NT_T; j++)
#pragma unroll
    for (int kk = 0; kk < KS_D; kk += 2) {
      unsigned kb[4];
      ldsm_x4(kb, s + (j * 8 + lr) * RS + kk * 16 + lm * 8);
      mma(acc[j], a[kk], kb[0], kb[1]);
      mma(acc[j], a[kk + 1], kb[2], kb[3]);
    }
#else
  const int g = lane >> 2, c = lane & 3;
#pragma unroll
  for (int j = 0; j < NT_T; j++)
#pragma unroll
    for (int kk = 0; kk < KS_D; kk++)
      mma(acc[j], a[kk], lds32(s + (j * 8 + g) * RS + kk * 16 + 2 * c), lds32(s + (j * 8 + g) * RS + kk * 16 + 8 + 2 * c));
#endif
}
// acc[nd] += P · M for P the warp's 16 x 64 accumulator tiles p (tiles 2kk, 2kk+1 are the A fragment of
// k step kk) and M a 64 x HD row-major tile s [TILE][RS]; ldmatrix.trans gives the B fragments of two
// 8-wide column tiles at once (its four matrices: rows 0-7 / 8-15 of the k step x columns nd, nd + 1).
static __device__ __forceinline__ void mma_pv(float (*acc)[4], float (*p)[4], const u16* s, int lane) {
  const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
  for (int kk = 0; kk < KS_T; kk++) {
    const unsigned a[4] = {pack2(p[2 * kk][0], p[2 * kk][1]), pack2(p[2 * kk][2], p[2 * kk][3]),
                           pack2(p[2 * kk + 1][0], p[2 * kk + 1][1]), pack2(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int nd = 0; nd < NT_D; nd += 2) {
      unsigned vb[4];
      ldsm_x4_trans(vb, s + (kk * 16 + lr + (lm & 1) * 8) * RS + nd * 8 + (lm >> 1) * 8);
      mma(acc[nd], a, vb[0], vb[1]);
      mma(acc[nd + 1], a, vb[2], vb[3]);
    }
  }
}
// Stores the warp's 16 x HD accumulator (times mul0 for row g, mul1 for row g + 8) at rows rowA, rowA + 8.
static __device__ __forceinline__ void store_rows(u16* base, long long ld, float (*acc)[4], int rowA, int T, float mul0, float mul1, int c) {
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) {
    const int col = nd * 8 + 2 * c;
    if (rowA < T) *(unsigned*)(base + (long long)rowA * ld + col) = pack2(acc[nd][0] * mul0, acc[nd][1] * mul0);
    if (rowA + 8 < T) *(unsigned*)(base + (long long)(rowA + 8) * ld + col) = pack2(acc[nd][2] * mul1, acc[nd][3] * mul1);
  }
}
`;

/**
 * Forward: 128 query rows per block (grid (B·H, ceil(T / 128)), heaviest first), 32 per warp as two
 * 16-row m tiles, so every K and V fragment read from shared memory feeds two mma instead of one.
 * V stays row-major in shared memory and its B fragments come from ldmatrix.trans. Key tiles that lie
 * wholly above a warp's rows (the causal triangle) are skipped by that warp.
 */
export const MMA_FORWARD = `${MMA_COMMON}
#define FQ (2 * TILE)
#define MT 2
extern "C" __global__ void __launch_bounds__(128) tdm_attn_fwd_mma(const u16* __restrict__ qkv, u16* __restrict__ y,
    float* __restrict__ lse, int T, int H, float scale_log2) {
  // Two stages of (K, V) tiles: the next tile's copies (cp.async) run while this one is used. Q (128 rows)
  // is staged through stage 1 before the key loop.
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
  const int row0 = q0 + w0 + g;  // row of m tile mt, half hf: row0 + 16 mt + 8 hf
  const int tiles = (min(q0 + FQ, T) - 1) / TILE + 1;
  for (int kt = 0; kt < tiles; kt++) {
    const int k0 = kt * TILE;
    if (kt + 1 < tiles) {
      u16* next = smem + ((kt + 1) & 1) * FQ * RS;
      load_tile_async(next, qb + C, ld, k0 + TILE, T);
      load_tile_async(next + TILE * RS, qb + 2 * C, ld, k0 + TILE, T);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile kt have landed
    __syncthreads();    // and everyone else's
    const u16* sK = smem + (kt & 1) * FQ * RS;
    const u16* sV = sK + TILE * RS;
    // Skip tiles whose every key is after every row of this warp (the warp still joins the barriers).
    if (k0 <= q0 + w0 + 31) {
    const bool mask = k0 + TILE - 1 > q0 + w0;
    float s[MT][NT_T][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int j = 0; j < NT_T; j++) { s[mt][j][0] = 0.f; s[mt][j][1] = 0.f; s[mt][j][2] = 0.f; s[mt][j][3] = 0.f; }
#if ATTN_V1
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int kk = 0; kk < KS_D; kk += 2) {
        unsigned kb[4];
        ldsm_x4(kb, sK + (j * 8 + (lane & 7)) * RS + kk * 16 + (lane >> 3) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(s[mt][j], qa[mt][kk], kb[0], kb[1]);
          mma(s[mt][j], qa[mt][kk + 1], kb[2], kb[3]);
        }
      }
#else
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int kk = 0; kk < KS_D; kk++) {
        const unsigned b0 = lds32(sK + (j * 8 + g) * RS + kk * 16 + 2 * c);
        const unsigned b1 = lds32(sK + (j * 8 + g) * RS + kk * 16 + 8 + 2 * c);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) mma(s[mt][j], qa[mt][kk], b0, b1);
      }
#endif
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
      for (int j = 0; j < NT_T; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = k0 + j * 8 + 2 * c + (e & 1);
#if ATTN_V1
          float v = s[mt][j][e];  // raw: the scale (> 0) is applied to the maximum and in the exponent's FFMA
#else
          float v = s[mt][j][e] * scale_log2;
#endif
          if (mask && key > row0 + 16 * mt + (e < 2 ? 0 : 8)) v = NEG_INF;
          s[mt][j][e] = v;
        }
        mx0 = fmaxf(mx0, fmaxf(s[mt][j][0], s[mt][j][1]));
        mx1 = fmaxf(mx1, fmaxf(s[mt][j][2], s[mt][j][3]));
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(FULL, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(FULL, mx1, 2));
      // Every row has seen key 0 by now, so the new maximum is finite (a wholly masked tile keeps it).
#if ATTN_V1
      const float n0 = fmaxf(m[mt][0], mx0 * scale_log2), n1 = fmaxf(m[mt][1], mx1 * scale_log2);
      const float c0 = ex2(m[mt][0] - n0), c1 = ex2(m[mt][1] - n1);
#else
      const float n0 = fmaxf(m[mt][0], mx0), n1 = fmaxf(m[mt][1], mx1);
      const float c0 = exp2f(m[mt][0] - n0), c1 = exp2f(m[mt][1] - n1);
#endif
      m[mt][0] = n0;
      m[mt][1] = n1;
      float r0 = 0.f, r1 = 0.f;
#pragma unroll
      for (int j = 0; j < NT_T; j++) {
#if ATTN_V1
        s[mt][j][0] = ex2(fmaf(s[mt][j][0], scale_log2, -n0));
        s[mt][j][1] = ex2(fmaf(s[mt][j][1], scale_log2, -n0));
        s[mt][j][2] = ex2(fmaf(s[mt][j][2], scale_log2, -n1));
        s[mt][j][3] = ex2(fmaf(s[mt][j][3], scale_log2, -n1));
#else
        s[mt][j][0] = exp2f(s[mt][j][0] - n0);
        s[mt][j][1] = exp2f(s[mt][j][1] - n0);
        s[mt][j][2] = exp2f(s[mt][j][2] - n1);
        s[mt][j][3] = exp2f(s[mt][j][3] - n1);
#endif
        r0 += s[mt][j][0] + s[mt][j][1];
        r1 += s[mt][j][2] + s[mt][j][3];
      }
      // Each lane keeps a partial row sum over its own columns; the 4 lanes of a row are added at the end.
      l[mt][0] = l[mt][0] * c0 + r0;
      l[mt][1] = l[mt][1] * c1 + r1;
#pragma unroll
      for (int nd = 0; nd < NT_D; nd++) { o[mt][nd][0] *= c0; o[mt][nd][1] *= c0; o[mt][nd][2] *= c1; o[mt][nd][3] *= c1; }
    }
    // O += P·V: P's accumulator tiles 2kk, 2kk+1 are the A fragment of k step kk; ldmatrix.trans gives
    // the B fragments of two 8-wide column tiles of V at once (matrices: keys 0-7 / 8-15 x dims nd, nd+1).
    const int lr = lane & 7, lm = lane >> 3;
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
    __syncthreads();  // stage kt & 1 is refilled by the next iteration's prefetch
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
`;

/**
 * dk, dv for 64 key rows per block over the query tiles from the diagonal on: grid (B·H, ceil(T / 64)),
 * block y = key tile (the first tiles have the most queries, so they start first).
 * Sᵀ = K·Qᵀ, Pᵀ = exp(scale·Sᵀ − lse), dPᵀ = V·dYᵀ, dSᵀ = Pᵀ ⊙ (dPᵀ − delta); dV += Pᵀ·dY, dK += dSᵀ·Q.
 */
export const MMA_DKDV = `${MMA_COMMON}
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
    mma_abt(p, ka, sQ, lane);
    mma_abt(ds, va, sdY, lane);
    const bool diag = t0 == s0;
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int col = j * 8 + 2 * c + (e & 1), t = t0 + col;
#if ATTN_V1
        float pv = ex2(fmaf(p[j][e], scale_log2, -sLt[col]));
#else
        float pv = exp2f(p[j][e] * scale_log2 - sLt[col]);
#endif
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
`;

/**
 * dq for 64 query rows per block over the key tiles up to the diagonal: grid (B·H, ceil(T / 64)),
 * heaviest first. S = Q·Kᵀ, P = exp(scale·S − lse), dP = dY·Vᵀ, dS = P ⊙ (dP − delta), dQ = scale·dS·K.
 */
export const MMA_DQ = `${MMA_COMMON}
extern "C" __global__ void __launch_bounds__(128) tdm_attn_dq_mma(const u16* __restrict__ dy, const u16* __restrict__ qkv,
    const float* __restrict__ lse, const float* __restrict__ delta, u16* __restrict__ dqkv, int T, int H, float scale, float scale_log2) {
  // Two stages of (K, V) tiles filled by cp.async; the block's Q and dY rows are staged through stage 1.
  alignas(16) __shared__ u16 smem[4 * TILE * RS];
  const int bh = blockIdx.x, b = bh / H, h = bh - b * H;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * TILE;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int C = H * HD, w0 = warp * 16;
  const long long ld = 3LL * C;
  const u16* qb = qkv + (long long)b * T * ld + (long long)h * HD;
  load_tile_async(smem, qb + C, ld, 0, T);
  load_tile_async(smem + TILE * RS, qb + 2 * C, ld, 0, T);
  cp_async_commit();
  load_tile(smem + 2 * TILE * RS, qb, ld, q0, T);
  load_tile(smem + 3 * TILE * RS, dy + (long long)b * T * C + (long long)h * HD, C, q0, T);
  __syncthreads();
  unsigned qa[KS_D][4], dya[KS_D][4];
  load_a(qa, smem + 2 * TILE * RS, w0, g, c);
  load_a(dya, smem + 3 * TILE * RS, w0, g, c);
  __syncthreads();
  const int rowA = q0 + w0 + g, rowB = rowA + 8;
  const float lA = rowA < T ? lse[(long long)bh * T + rowA] * LOG2E : 0.f;
  const float lB = rowB < T ? lse[(long long)bh * T + rowB] * LOG2E : 0.f;
  const float dA = rowA < T ? delta[(long long)bh * T + rowA] : 0.f;
  const float dB = rowB < T ? delta[(long long)bh * T + rowB] : 0.f;
  float dq[NT_D][4];
#pragma unroll
  for (int nd = 0; nd < NT_D; nd++) { dq[nd][0] = 0.f; dq[nd][1] = 0.f; dq[nd][2] = 0.f; dq[nd][3] = 0.f; }
  const int last = q0 / TILE;
  for (int kt = 0; kt <= last; kt++) {
    const int k0 = kt * TILE, st = kt & 1;
    if (kt < last) {
      u16* next = smem + (st ^ 1) * 2 * TILE * RS;
      load_tile_async(next, qb + C, ld, k0 + TILE, T);
      load_tile_async(next + TILE * RS, qb + 2 * C, ld, k0 + TILE, T);
    }
    cp_async_commit();  // possibly empty: keeps one group per iteration
    cp_async_wait_1();  // this thread's copies of tile kt have landed
    __syncthreads();    // and everyone else's
    const u16* sK = smem + st * 2 * TILE * RS;
    const u16* sV = sK + TILE * RS;
    float s[NT_T][4], dp[NT_T][4];
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) { s[j][e] = 0.f; dp[j][e] = 0.f; }
    mma_abt(s, qa, sK, lane);
    mma_abt(dp, dya, sV, lane);
    const bool diag = kt == last;
#pragma unroll
    for (int j = 0; j < NT_T; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int key = k0 + j * 8 + 2 * c + (e & 1);
        const bool lo = e < 2;
#if ATTN_V1
        float pv = ex2(fmaf(s[j][e], scale_log2, -(lo ? lA : lB)));
#else
        float pv = exp2f(s[j][e] * scale_log2 - (lo ? lA : lB));
#endif
        if (diag && key > (lo ? rowA : rowB)) pv = 0.f;
        s[j][e] = pv * (dp[j][e] - (lo ? dA : dB));
      }
    mma_pv(dq, s, sK, lane);
    __syncthreads();  // stage st is refilled by the next iteration's prefetch
  }
  store_rows(dqkv + (long long)b * T * ld + (long long)h * HD, ld, dq, rowA, T, scale, scale, c);
}
`;
