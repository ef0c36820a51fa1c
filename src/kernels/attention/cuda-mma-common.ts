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

/**
 * The helpers every tensor-core attention kernel shares: the forward (cuda-mma.ts, cuda-mma-fwd2.ts) and
 * the backward (attention_backward/cuda-mma-dkdv-dq.ts, cuda-mma-bwd.ts, cuda-mma-bwd-halves.ts).
 */
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
#ifndef ATTN_FAST
#define ATTN_FAST 0
#endif
typedef unsigned short u16;
struct alignas(16) tdm_v4 { unsigned x, y, z, w; };
struct alignas(8) tdm_f2 { float x, y; };
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
// 2^(s · scale_log2 − l2), the backward's P from a raw score and its row's lse (base 2): under ATTN_V1
// ex2.approx with the scale folded into one FFMA, else exp2f.
static __device__ __forceinline__ float prob2(float s, float scale_log2, float l2) {
#if ATTN_V1 || ATTN_FAST
  return ex2(fmaf(s, scale_log2, -l2));
#else
  return exp2f(s * scale_log2 - l2);
#endif
}
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
// acc[nd] += a · M over k step kk (rows 16 kk..) of a row-major tile s [..][RS] of HD columns, a the
// A fragment of the step: ldmatrix.trans gives the B fragments of two 8-wide column tiles at once (its
// four matrices: rows 0-7 / 8-15 of the step x columns nd, nd + 1); lr = lane & 7, lm = lane >> 3.
static __device__ __forceinline__ void mma_pv_step(float (*acc)[4], const unsigned* a, const u16* s, int kk, int lr, int lm) {
#pragma unroll
  for (int nd = 0; nd < NT_D; nd += 2) {
    unsigned vb[4];
    ldsm_x4_trans(vb, s + (kk * 16 + lr + (lm & 1) * 8) * RS + nd * 8 + (lm >> 1) * 8);
    mma(acc[nd], a, vb[0], vb[1]);
    mma(acc[nd + 1], a, vb[2], vb[3]);
  }
}
// acc[nd] += P · M for P the warp's 16 x 64 accumulator tiles p (tiles 2kk, 2kk+1 are the A fragment of
// k step kk) and M a 64 x HD row-major tile s [TILE][RS].
static __device__ __forceinline__ void mma_pv(float (*acc)[4], float (*p)[4], const u16* s, int lane) {
  const int lr = lane & 7, lm = lane >> 3;
#pragma unroll
  for (int kk = 0; kk < KS_T; kk++) {
    const unsigned a[4] = {pack2(p[2 * kk][0], p[2 * kk][1]), pack2(p[2 * kk][2], p[2 * kk][3]),
                           pack2(p[2 * kk + 1][0], p[2 * kk + 1][1]), pack2(p[2 * kk + 1][2], p[2 * kk + 1][3])};
    mma_pv_step(acc, a, s, kk, lr, lm);
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
 * Which (batch · head, tile) a block works on, and how many tiles of `rows` rows a head has: `bh`,
 * `tile`, `ntile`. Launched as a line of blocks (gridDim.y == 1; cuda-plan.ts's grid) a head's tiles are
 * neighbours, so the blocks resident at once cover a few dozen heads and re-read their K, V (Q, dY) from
 * L2: with x = batch · head the resident blocks spanned 260-400 heads (64-100 MB of K and V against 50 MB
 * of L2; on an H100 the L2 hit rate was 36-40 % and the dq kernel moved 2.4 TB/s from DRAM). A 2-D grid
 * (x = batch · head, y = tile), as the attention lab launches, still works.
 */
export const tileIndex = (rows: string): string => `  const bool lined = gridDim.y == 1;
  const int ntile = lined ? (T + ${rows} - 1) / ${rows} : (int)gridDim.y;
  const int bh = lined ? (int)blockIdx.x / ntile : (int)blockIdx.x;
  const int tile = lined ? (int)blockIdx.x - bh * ntile : (int)blockIdx.y;`;

/**
 * A kernel's block and lane indices (tileIndex over `rows`-row tiles), its head's row stride in qkv (ld)
 * and base (qb): `first` declares the block's first row from tile and ntile, each warp owns `warpRows`
 * rows from w0.
 */
export const blockSetup = (first: string, warpRows: number, rows: string): string => `${tileIndex(rows)}
  const int b = bh / H, h = bh - b * H;
  ${first}
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int C = H * HD, w0 = warp * ${warpRows};
  const long long ld = 3LL * C;
  const u16* qb = qkv + (long long)b * T * ld + (long long)h * HD;`;
