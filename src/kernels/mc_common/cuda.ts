/**
 * Fused CUDA programs for mc_european / mc_asian: each thread generates its Philox blocks, turns them
 * into normals and payoffs in registers (random numbers never touch memory), and each block writes one
 * row of partial sums (warp shuffles, then one value per warp). Same streams and uniforms as the CPU
 * and WGSL kernels bit for bit; the transcendentals are the approximate PTX ones (one MUFU op each,
 * accurate to a few ulps, far below the Monte Carlo error), and the payoff is one fma and a max:
 *   S = A 2^(scale z) with A = spot e^mu, scale = sigma log2(e);  call: max(A e - K, 0), put: max(K - A e, 0).
 * The antithetic path is 2^(-scale z) (one more MUFU op). Full streams (4 samples) run in a branch-free
 * loop; only the last stream of a price can be partial.
 */
import type { CudaArgDesc, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { readMcScalars } from './def.js';
import { PHILOX_CUDA } from './sources.js';

const THREADS = 256;

const PARAMS = `(OUT_T* __restrict__ out, long long first, long long streams, long long samples, int steps,
  unsigned k0, unsigned k1, float spot, float strike, float mu, float sigma, int call, int anti)`;

const PROLOGUE = `
  const long long per = (streams + gridDim.x - 1) / gridDim.x;
  const long long b0 = first + min(streams, (long long)blockIdx.x * per);
  const long long b1 = first + min(streams, ((long long)blockIdx.x + 1) * per);
  // Signed payoff terms: call max(A e - K, 0), put max(K - A e, 0) = max(-A e + K, 0).
  const float sgn = call ? 1.f : -1.f;
  const float sK = -sgn * strike;
  const float scale = sigma * 1.4426950408889634f;
  float a1 = 0.f, a2 = 0.f;
  int cnt = 0;`;

const EPILOGUE = `
  tdm_block_sum3f(out, blockIdx.x, a1, a2, cnt);`;

/**
 * The European path engine as device functions (payoffs of a stream range into per-thread sums), shared
 * by mc_european and the batched mc_european_batch so both draw and sum the same samples the same way.
 */
export const MC_EUROPEAN_DEVICE_CUDA = `
template <bool ANTI>
static __device__ __forceinline__ float tdm_eu_payoff(float x, float sA, float sK) {
  float p = fmaxf(fmaf(sA, tdm_ex2(x), sK), 0.f);
  if (ANTI) p = 0.5f * (p + fmaxf(fmaf(sA, tdm_ex2(-x), sK), 0.f));
  return p;
}
template <bool ANTI>
static __device__ __forceinline__ void tdm_eu_stream(long long s, unsigned k0, unsigned k1, float scale,
    float sA, float sK, int lanes, float& a1, float& a2) {
  const uint4 w = tdm_philox(make_uint4((unsigned)s, 0u, (unsigned)(s >> 32), 0u), k0, k1);
  float r0, c0, s0, r1, c1, s1;
  tdm_bm_fast(w.x, w.y, scale, r0, c0, s0);
  tdm_bm_fast(w.z, w.w, scale, r1, c1, s1);
  const float x[4] = {r0 * c0, r0 * s0, r1 * c1, r1 * s1};
#pragma unroll
  for (int k = 0; k < 4; k++) {
    if (k < lanes) {
      const float p = tdm_eu_payoff<ANTI>(x[k], sA, sK);
      a1 += p; a2 = fmaf(p, p, a2);
    }
  }
}
template <bool ANTI>
static __device__ __forceinline__ void tdm_eu_run(long long b0, long long b1, long long samples,
    unsigned k0, unsigned k1, float scale, float sA, float sK, float& a1, float& a2, int& cnt) {
  const long long full = min(b1, samples >> 2);
  long long s = b0 + threadIdx.x;
  for (; s < full; s += blockDim.x) {
    tdm_eu_stream<ANTI>(s, k0, k1, scale, sA, sK, 4, a1, a2);
    cnt += 4;
  }
  // The one partial stream of a price (samples not a multiple of 4), if it falls in this block.
  if (s < b1 && 4 * s < samples) {
    const int lanes = (int)(samples - 4 * s);
    tdm_eu_stream<ANTI>(s, k0, k1, scale, sA, sK, lanes, a1, a2);
    cnt += lanes;
  }
}`;

export const MC_EUROPEAN_CUDA_SOURCE = `${PHILOX_CUDA}${MC_EUROPEAN_DEVICE_CUDA}
// 8 blocks of 256 per SM (32 registers, no spills): a full SM of warps hides the MUFU and IMAD latency.
extern "C" __global__ void __launch_bounds__(${THREADS}, 8) tdm_mc_european${PARAMS} {
${PROLOGUE}
  const float sA = sgn * spot * expf(mu);
  if (anti) tdm_eu_run<true>(b0, b1, samples, k0, k1, scale, sA, sK, a1, a2, cnt);
  else tdm_eu_run<false>(b0, b1, samples, k0, k1, scale, sA, sK, a1, a2, cnt);
${EPILOGUE}
}`;

export const MC_ASIAN_CUDA_SOURCE = `${PHILOX_CUDA}
extern "C" __global__ void __launch_bounds__(${THREADS}) tdm_mc_asian${PARAMS} {
${PROLOGUE}
  const float muL = mu * 1.4426950408889634f;
  const float inv = 1.f / (float)steps;
  for (long long s = b0 + threadIdx.x; s < b1; s += blockDim.x) {
    float S = spot, Sb = spot, acc = 0.f, accb = 0.f;
    // Four monitoring dates per Philox block, unrolled so the variates stay in registers.
    for (int j = 0; j < steps; j += 4) {
      const uint4 w = tdm_philox(make_uint4((unsigned)s, (unsigned)(j >> 2), (unsigned)(s >> 32), 0u), k0, k1);
      float r0, c0, s0, r1, c1, s1;
      tdm_bm_fast(w.x, w.y, scale, r0, c0, s0);
      tdm_bm_fast(w.z, w.w, scale, r1, c1, s1);
      const float x[4] = {r0 * c0, r0 * s0, r1 * c1, r1 * s1};
#pragma unroll
      for (int k = 0; k < 4; k++) {
        if (j + k < steps) {
          S *= tdm_ex2(muL + x[k]); acc += S;
          if (anti) { Sb *= tdm_ex2(muL - x[k]); accb += Sb; }
        }
      }
    }
    float p = fmaxf(fmaf(sgn, acc * inv, sK), 0.f);
    if (anti) p = 0.5f * (p + fmaxf(fmaf(sgn, accb * inv, sK), 0.f));
    a1 += p; a2 = fmaf(p, p, a2); cnt += 1;
  }
${EPILOGUE}
}`;

function params(op: 'mc_european' | 'mc_asian', scalars: Scalars): CudaParam[] {
  const { first, streams, spec } = readMcScalars(op, scalars);
  return [
    { kind: 'ptr', arg: 0 },
    { kind: 'i64', value: first },
    { kind: 'i64', value: streams },
    { kind: 'i64', value: spec.samples },
    { kind: 'i32', value: spec.steps },
    { kind: 'u32', value: spec.seed % 2 ** 32 },
    { kind: 'u32', value: Math.floor(spec.seed / 2 ** 32) },
    { kind: 'f32', value: spec.spot },
    { kind: 'f32', value: spec.strike },
    { kind: 'f32', value: spec.mu },
    { kind: 'f32', value: spec.sigma },
    { kind: 'i32', value: spec.call ? 1 : 0 },
    { kind: 'i32', value: spec.antithetic ? 1 : 0 },
  ];
}

function program(op: 'mc_european' | 'mc_asian', source: string): CudaProgram {
  return {
    kind: 'program',
    source,
    entry: `tdm_${op}`,
    prelude: false,
    // The partial sums (12 bytes a row) are what the host reads next: copy them back with the kernel.
    readback: [0],
    defines: (args: readonly CudaArgDesc[]) => ({
      OUT_T: args[0]!.desc.dtype === 'f64' ? 'double' : 'float',
    }),
    grid: (args) => [args[0]!.desc.shape[0]!, 1, 1],
    block: () => [THREADS, 1, 1],
    params: (_args, scalars) => params(op, scalars),
  };
}

export const mcEuropeanCuda = program('mc_european', MC_EUROPEAN_CUDA_SOURCE);
export const mcAsianCuda = program('mc_asian', MC_ASIAN_CUDA_SOURCE);
