/**
 * mc_var on CUDA: one thread per scenario, normals in registers, the portfolio read through the
 * read-only cache. The asset count is compiled in (D), so the shock arrays live in registers/local
 * memory of fixed size; each distinct asset count compiles once and is cached.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { PHILOX_CUDA } from '../mc_common/sources.js';
import { readVarScalars } from './def.js';

export const MC_VAR_CUDA_SOURCE = `${PHILOX_CUDA}
static __device__ __forceinline__ float tdm_bs(float S, float K, float r, float v, float T, float q, int kind) {
  if (T <= 0.f) return kind == 1 ? fmaxf(S - K, 0.f) : fmaxf(K - S, 0.f);
  const float sq = v * sqrtf(T);
  const float d1 = (logf(S / K) + (r - q + 0.5f * v * v) * T) / sq, d2 = d1 - sq;
  const float a = S * expf(-q * T), b = K * expf(-r * T);
  return kind == 1 ? a * normcdff(d1) - b * normcdff(d2) : b * normcdff(-d2) - a * normcdff(-d1);
}
extern "C" __global__ void tdm_mc_var(const T_t* __restrict__ pf, L_t* __restrict__ losses, long long n, long long first,
    int np, float horizon, float rate, double v0, unsigned k0, unsigned k1) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long s = first + i;
  const T_t* spot = pf; const T_t* vol = pf + D; const T_t* drift = pf + 2 * D; const T_t* div = pf + 3 * D;
  const T_t* L = pf + 4 * D; const T_t* pos = pf + 4 * D + D * D;
  float z[(D + 3) / 4 * 4];
#pragma unroll
  for (int b = 0; b < (D + 3) / 4; b++) {
    const uint4 w = tdm_philox(make_uint4((unsigned)s, (unsigned)b, (unsigned)(s >> 32), 0u), k0, k1);
    tdm_boxmuller(w.x, w.y, z[4 * b], z[4 * b + 1]);
    tdm_boxmuller(w.z, w.w, z[4 * b + 2], z[4 * b + 3]);
  }
  float S[D];
  const float sh = sqrtf(horizon);
#pragma unroll
  for (int a = 0; a < D; a++) {
    float w = 0.f;
    for (int k = 0; k <= a; k++) w += (float)L[a * D + k] * z[k];
    const float v = (float)vol[a];
    S[a] = (float)spot[a] * expf(((float)drift[a] - (float)div[a] - 0.5f * v * v) * horizon + v * sh * w);
  }
  double value = 0.0;
  for (int p = 0; p < np; p++) {
    const int a = (int)pos[p], kind = (int)pos[np + p];
    const float q = (float)pos[4 * np + p];
    float sa = 0.f;
#pragma unroll
    for (int k = 0; k < D; k++) if (k == a) sa = S[k];
    value += kind == 0 ? q * sa : q * tdm_bs(sa, (float)pos[2 * np + p], rate, (float)vol[a], (float)pos[3 * np + p] - horizon, (float)div[a], kind);
  }
  losses[i] = (L_t)(v0 - value);
}`;

export const mcVarCuda: CudaProgram = {
  kind: 'program',
  source: MC_VAR_CUDA_SOURCE,
  entry: 'tdm_mc_var',
  prelude: false,
  defines: (args, scalars) => ({
    D: readVarScalars(scalars).assets,
    T_t: args[0]!.desc.dtype === 'f64' ? 'double' : 'float',
    L_t: args[1]!.desc.dtype === 'f64' ? 'double' : 'float',
  }),
  grid: (args) => [Math.ceil(args[1]!.desc.shape[0]! / 128), 1, 1],
  block: () => [128, 1, 1],
  params: (args, scalars) => {
    const s = readVarScalars(scalars);
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'i64', value: args[1]!.desc.shape[0]! },
      { kind: 'i64', value: s.first },
      { kind: 'i32', value: s.positions },
      { kind: 'f32', value: s.horizon },
      { kind: 'f32', value: s.rate },
      { kind: 'f64', value: s.v0 },
      { kind: 'u32', value: s.seed % 2 ** 32 },
      { kind: 'u32', value: Math.floor(s.seed / 2 ** 32) },
    ];
  },
};
