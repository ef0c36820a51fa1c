// Host emulation of the CUDA subset the attention and norm kernels use (test/kernels/cuda-emu/host-cuda.ts compiles
// kernel sources against it with g++): one block at a time, one std::thread per CUDA thread, std::barrier
// for __syncthreads and the warp-collective operations (shuffles, mma.sync, ldmatrix), which follow the
// fragment layouts of the PTX ISA. Shared memory is a function-static array: blocks run one after another.
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <barrier>
#include <thread>
#include <vector>
#include <algorithm>
#include <mutex>
using std::min; using std::max;
struct emu_dim3 { unsigned x, y, z; };
thread_local emu_dim3 threadIdx, blockIdx;
emu_dim3 blockDim, gridDim;
std::barrier<>* g_block_bar;
std::barrier<>* g_warp_bar[32];
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static
inline void __syncthreads() { g_block_bar->arrive_and_wait(); }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
// Round-to-nearest double operations that CUDA never contracts into an fma; volatile keeps g++ from
// contracting them either.
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
static inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
static double g_shfl[32][32];
// The thread's linear index in its block (warps are runs of 32 of it, as on the GPU; blocks may be 2-D).
static inline unsigned emu_tid() { return threadIdx.y * blockDim.x + threadIdx.x; }
static inline void warp_bar() { g_warp_bar[emu_tid() >> 5]->arrive_and_wait(); }
template <class T> T __shfl_xor_sync(unsigned, T v, int o) {
  int lane = emu_tid() & 31, w = emu_tid() >> 5;
  g_shfl[w][lane] = (double)v; warp_bar();
  T r = (T)g_shfl[w][lane ^ o]; warp_bar();
  return r;
}
template <class T> T __shfl_down_sync(unsigned, T v, int o) {
  int lane = emu_tid() & 31, w = emu_tid() >> 5;
  g_shfl[w][lane] = (double)v; warp_bar();
  T r = (T)g_shfl[w][lane + o < 32 ? lane + o : lane]; warp_bar();
  return r;
}
// Atomics: one lock for all (blocks run one at a time, their threads at once).
static std::mutex g_atomic;
template <class T> T atomicAdd(T* p, T v) { std::lock_guard<std::mutex> g(g_atomic); T old = *p; *p = old + v; return old; }
struct alignas(16) uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
template <class T> T __shfl_sync(unsigned, T v, int src) {
  int lane = emu_tid() & 31, w = emu_tid() >> 5;
  g_shfl[w][lane] = (double)v; warp_bar();
  T r = (T)g_shfl[w][src]; warp_bar();
  return r;
}
static inline float emu_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
static inline unsigned short emu_f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return 0x7fc0;
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float emu_h2f(unsigned short h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static inline unsigned short emu_f2h(float f) { _Float16 x = (_Float16)f; unsigned short h; memcpy(&h, &x, 2); return h; }
// cp.async: the copy happens at once (commit and wait have nothing left to do).
static inline void cp_async16(void* s, const void* g, int bytes) {
  if (bytes == 16) memcpy(s, g, 16); else memset(s, 0, 16);
}
static inline void cp_async_commit() {}
static inline void cp_async_wait_1() {}
#ifdef IS_BF16_EMU
static inline float emu_half(unsigned short h) { return IS_BF16_EMU ? emu_bf2f(h) : emu_h2f(h); }
static inline unsigned short emu_round(float f) { return IS_BF16_EMU ? emu_f2bf(f) : emu_f2h(f); }
static unsigned g_fa[32][32][4], g_fb[32][32][2];
// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: fragment layouts from the PTX ISA.
static inline void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  int lane = emu_tid() & 31, w = emu_tid() >> 5;
  for (int i = 0; i < 4; i++) g_fa[w][lane][i] = a[i];
  g_fb[w][lane][0] = b0; g_fb[w][lane][1] = b1;
  warp_bar();
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, t = l & 3;
    auto lo = [](unsigned r) { return emu_half((unsigned short)(r & 0xffff)); };
    auto hi = [](unsigned r) { return emu_half((unsigned short)(r >> 16)); };
    A[g][2 * t] = lo(g_fa[w][l][0]); A[g][2 * t + 1] = hi(g_fa[w][l][0]);
    A[g + 8][2 * t] = lo(g_fa[w][l][1]); A[g + 8][2 * t + 1] = hi(g_fa[w][l][1]);
    A[g][2 * t + 8] = lo(g_fa[w][l][2]); A[g][2 * t + 9] = hi(g_fa[w][l][2]);
    A[g + 8][2 * t + 8] = lo(g_fa[w][l][3]); A[g + 8][2 * t + 9] = hi(g_fa[w][l][3]);
    B[2 * t][g] = lo(g_fb[w][l][0]); B[2 * t + 1][g] = hi(g_fb[w][l][0]);
    B[2 * t + 8][g] = lo(g_fb[w][l][1]); B[2 * t + 9][g] = hi(g_fb[w][l][1]);
  }
  warp_bar();
  int g = lane >> 2, t = lane & 3;
  float d[4];
  for (int e = 0; e < 4; e++) {
    int row = e < 2 ? g : g + 8, col = 2 * t + (e & 1);
    float acc = c[e];
    for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
    d[e] = acc;
  }
  for (int e = 0; e < 4; e++) c[e] = d[e];
}
static const unsigned short* g_ldsm[32][32];
// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16: lane l names row l%8 of matrix l/8; r[i] = matrix i
// transposed: low half M_i[2c][g], high half M_i[2c+1][g] (g = lane/4, c = lane%4).
static inline void ldsm_x4_trans(unsigned* r, const unsigned short* p) {
  int lane = emu_tid() & 31, w = emu_tid() >> 5;
  if (((uintptr_t)p) & 15) { fprintf(stderr, "ldmatrix row address not 16-byte aligned\n"); exit(3); }
  g_ldsm[w][lane] = p; warp_bar();
  int g = lane >> 2, c = lane & 3;
  for (int i = 0; i < 4; i++) {
    unsigned lo = g_ldsm[w][i * 8 + 2 * c][g], hi = g_ldsm[w][i * 8 + 2 * c + 1][g];
    r[i] = lo | (hi << 16);
  }
  warp_bar();
}
// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lane l names row l%8 of matrix l/8; r[i] = matrix i in
// the fragment order: low half M_i[g][2c], high half M_i[g][2c+1].
static inline void ldsm_x4(unsigned* r, const unsigned short* p) {
  int lane = emu_tid() & 31, w = emu_tid() >> 5;
  if (((uintptr_t)p) & 15) { fprintf(stderr, "ldmatrix row address not 16-byte aligned\n"); exit(3); }
  g_ldsm[w][lane] = p; warp_bar();
  int g = lane >> 2, c = lane & 3;
  for (int i = 0; i < 4; i++) {
    unsigned lo = g_ldsm[w][i * 8 + g][2 * c], hi = g_ldsm[w][i * 8 + g][2 * c + 1];
    r[i] = lo | (hi << 16);
  }
  warp_bar();
}
// ex2.approx.ftz.f32 (relative error 2^-22 on the GPU): the exact value here.
static inline float ex2(float x) { return exp2f(x); }
// red.global.add(.v2).f32: atomic adds (blocks run one at a time here, threads of a block at once).
static inline void red_add_v2(float* dst, float a, float b) {
  std::lock_guard<std::mutex> lock(g_atomic);
  dst[0] += a;
  dst[1] += b;
}
static inline float h2f_lo(unsigned v) { return emu_half((unsigned short)(v & 0xffffu)); }
static inline float h2f_hi(unsigned v) { return emu_half((unsigned short)(v >> 16)); }
static inline unsigned pack2(float lo, float hi) { return (unsigned)emu_round(lo) | ((unsigned)emu_round(hi) << 16); }
#endif
template <class F> void emu_launch(emu_dim3 grid, emu_dim3 block, F kernel) {
  const int threads = (int)(block.x * block.y);
  gridDim = grid; blockDim = {block.x, block.y, 1};
  std::barrier<> bb(threads); g_block_bar = &bb;
  for (int w = 0; w < threads / 32; w++) { g_warp_bar[w] = new std::barrier<>(32); }
  for (unsigned by = 0; by < grid.y; by++)
    for (unsigned bx = 0; bx < grid.x; bx++) {
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; t++)
        ts.emplace_back([=] { threadIdx = {t % block.x, t / block.x, 0}; blockIdx = {bx, by, 0}; kernel(); });
      for (auto& th : ts) th.join();
    }
  for (int w = 0; w < threads / 32; w++) delete g_warp_bar[w];
}
template <class T> std::vector<T> emu_read(const char* path, size_t n) {
  std::vector<T> v(n); FILE* f = fopen(path, "rb"); if (!f || fread(v.data(), sizeof(T), n, f) != n) { fprintf(stderr, "read %s\n", path); exit(2); } fclose(f); return v;
}
template <class T> void emu_write(const char* path, const std::vector<T>& v) {
  FILE* f = fopen(path, "wb"); fwrite(v.data(), sizeof(T), v.size(), f); fclose(f);
}
