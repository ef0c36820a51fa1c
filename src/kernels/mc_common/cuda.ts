/**
 * Fused CUDA programs for mc_european / mc_asian: each thread generates its Philox blocks, turns them
 * into normals and payoffs in registers (random numbers never touch memory), and each block writes one
 * row of partial sums. Fast intrinsics (__expf, __logf, __sincosf) are accurate to a few ulps in f32,
 * far below the Monte Carlo error.
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
  float a1 = 0.f, a2 = 0.f, cnt = 0.f;
#define PAYOFF(s) (call ? fmaxf((s) - strike, 0.f) : fmaxf(strike - (s), 0.f))`;

const EPILOGUE = `
  tdm_block_sum3(out, (double)a1, (double)a2, (double)cnt);`;

export const MC_EUROPEAN_CUDA_SOURCE = `${PHILOX_CUDA}
extern "C" __global__ void __launch_bounds__(${THREADS}) tdm_mc_european${PARAMS} {
${PROLOGUE}
  const float A = spot * __expf(mu);
  for (long long s = b0 + threadIdx.x; s < b1; s += blockDim.x) {
    const uint4 w = tdm_philox(make_uint4((unsigned)s, 0u, (unsigned)(s >> 32), 0u), k0, k1);
    float z[4];
    tdm_boxmuller(w.x, w.y, z[0], z[1]);
    tdm_boxmuller(w.z, w.w, z[2], z[3]);
    const long long left = samples - 4 * s;
    const int lanes = left < 4 ? (int)left : 4;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      if (k < lanes) {
        const float e = __expf(sigma * z[k]);
        float p = PAYOFF(A * e);
        // The antithetic path exp(mu - sigma z) = A / e: a division instead of a second exponential.
        if (anti) p = 0.5f * (p + PAYOFF(__fdividef(A, e)));
        a1 += p; a2 += p * p; cnt += 1.f;
      }
    }
  }
${EPILOGUE}
}`;

export const MC_ASIAN_CUDA_SOURCE = `${PHILOX_CUDA}
extern "C" __global__ void __launch_bounds__(${THREADS}) tdm_mc_asian${PARAMS} {
${PROLOGUE}
  const float E2 = __expf(2.f * mu);
  const float inv = 1.f / (float)steps;
  for (long long s = b0 + threadIdx.x; s < b1; s += blockDim.x) {
    float S = spot, Sb = spot, acc = 0.f, accb = 0.f;
    float z[4];
    for (int j = 0; j < steps; j++) {
      if ((j & 3) == 0) {
        const uint4 w = tdm_philox(make_uint4((unsigned)s, (unsigned)(j >> 2), (unsigned)(s >> 32), 0u), k0, k1);
        tdm_boxmuller(w.x, w.y, z[0], z[1]);
        tdm_boxmuller(w.z, w.w, z[2], z[3]);
      }
      const float g = __expf(mu + sigma * z[j & 3]);
      S *= g; acc += S;
      if (anti) { Sb *= __fdividef(E2, g); accb += Sb; }
    }
    float p = PAYOFF(acc * inv);
    if (anti) p = 0.5f * (p + PAYOFF(accb * inv));
    a1 += p; a2 += p * p; cnt += 1.f;
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
