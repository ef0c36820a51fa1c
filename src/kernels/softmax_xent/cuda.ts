/**
 * softmax_xent on CUDA: one block per row, two sweeps and no stored probabilities.
 * Sweep 1: every thread keeps an online (max, Σexp) pair over its elements (one exp each), merged by
 * warp shuffles and then across warps in shared memory; lse = max + log Σ. Thread 0 reads the target's
 * logit and writes the loss before the barrier that precedes sweep 2, so no gradient can overwrite it.
 * Sweep 2 (BACKWARD): re-reads the row and writes (exp(x − lse) − [j = t])·gradScale over it, 0 in
 * the padding. 16-byte vector loads and stores when Vp and the pointer allow; X_c accumulation.
 */
import type { Scalars } from '../../devices/device.js';
import type { CudaNative, CudaProgram } from '../../devices/cuda/kernel-api.js';
import { NORM_CUDA, vectorWidth } from '../common/norm-cuda.js';
import { xentParams } from './def.js';

const SOURCE = `${NORM_CUDA}
// Merges (m2, s2) into (m, s): s·e^(m−M) + s2·e^(m2−M) with M the larger max. Empty pairs (−inf, 0)
// stay out of the exp (−inf − −inf would be NaN); a NaN max wins, so NaN logits give a NaN loss.
static __device__ __forceinline__ void xent_merge(X_c& m, X_c& s, X_c m2, X_c s2) {
  if (m2 == NRM_NEG_INF) return;
  if (m == NRM_NEG_INF) { m = m2; s = s2; return; }
  const X_c mm = m2 > m ? m2 : m;
  s = s * m_exp(m - mm) + s2 * m_exp(m2 - mm);
  m = (m != m || m2 != m2) ? NRM_NAN : mm;
}
extern "C" __global__ void tdm_softmax_xent(X_t* logits, const int* __restrict__ targets,
    S_t* __restrict__ losses, int Vp, int V, double gradScale
#if SCALED
    , const double* __restrict__ scale
#endif
    ) {
  __shared__ X_c sm[32], ss[32];
#if BACKWARD
  __shared__ X_c s_max, s_logsum;
#endif
  const long long row = blockIdx.x;
  X_t* xr = logits + row * (long long)Vp;
  X_c m = NRM_NEG_INF, s = (X_c)0;
#pragma unroll 4
  for (int j = threadIdx.x * VEC; j < V; j += blockDim.x * VEC) {
    X_c v[VEC];
    nrm_ld(xr, j, v);
#pragma unroll
    for (int k = 0; k < VEC; k++) {
      if (j + k < V) {
        const X_c x = v[k];
        if (x > m) { s = s * m_exp(m - x) + (X_c)1; m = x; }   // m = −inf: s is 0, e^(−inf) = 0
        else if (x == x) s += m_exp(x - m);
        else { m = NRM_NAN; s = NRM_NAN; }
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const X_c m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const X_c s2 = __shfl_xor_sync(0xffffffffu, s, o);
    xent_merge(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { sm[warp] = m; ss[warp] = s; }
  __syncthreads();
  const int t = targets[row];
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); w++) xent_merge(m, s, sm[w], ss[w]);
    // lse = m + log Σ, but kept as its two parts: (m − x_t) + log Σ and e^((x − m) − log Σ) lose
    // nothing to the rounding of m + log Σ when the logits are large (±300: an ulp of m is 3e-5).
    const X_c logsum = m_log(s);
#if BACKWARD
    s_max = m;
    s_logsum = logsum;
#endif
    X_c loss = (X_c)0;
    if (t >= 0 && t < V) loss = (m - ldX(xr, t)) + logsum;
    else if (t != -1) loss = NRM_NAN;
    stS(losses, row, loss);
  }
  __syncthreads();
#if BACKWARD
  const X_c rowmax = s_max, logsum = s_logsum;
#if SCALED
  const X_c gs = (X_c)(gradScale * scale[0]);  // softmax_xent_scaled: the loss scale from the device
#else
  const X_c gs = (X_c)gradScale;
#endif
  const bool bad = t < -1 || t >= V;
#pragma unroll 4
  for (int j = threadIdx.x * VEC; j < Vp; j += blockDim.x * VEC) {
    X_c v[VEC];
    nrm_ld(xr, j, v);
#pragma unroll
    for (int k = 0; k < VEC; k++) {
      const int col = j + k;
      X_c g = (X_c)0;
      if (col < V && t != -1) g = bad ? NRM_NAN : (m_exp((v[k] - rowmax) - logsum) - (col == t ? (X_c)1 : (X_c)0)) * gs;
      v[k] = g;
    }
    nrm_st(xr, j, v);
  }
#endif
}
`;

interface XentLaunch {
  readonly rows: number;
  readonly padded: number;
  readonly vocab: number;
  readonly gradScale: number;
  readonly backward: number;
  readonly vec: number;
  readonly block: number;
}
const L = (s: Scalars): XentLaunch => s as unknown as XentLaunch;

/** softmax_xent, or with `scaled` softmax_xent_scaled (its `scale` tensor is argument 3). */
function program(scaled: boolean): CudaProgram {
  return {
    kind: 'program',
    source: SOURCE,
    entry: 'tdm_softmax_xent',
    dtypes: (args) => ({ X: args[0]!.desc.dtype, S: args[2]!.desc.dtype }),
    defines: (_a, s) => ({ VEC: L(s).vec, BACKWARD: L(s).backward, SCALED: scaled ? 1 : 0 }),
    grid: (_a, s) => [L(s).rows, 1, 1],
    block: (_a, s) => [L(s).block, 1, 1],
    params: (_a, s) => [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'i32', value: L(s).padded },
      { kind: 'i32', value: L(s).vocab },
      { kind: 'f64', value: L(s).gradScale },
      ...(scaled ? [{ kind: 'ptr', arg: 3 } as const] : []),
    ],
  };
}

const PROGRAM = program(false);
const SCALED_PROGRAM = program(true);

export const softmaxXentCuda: CudaNative = native(PROGRAM);
export const softmaxXentScaledCuda: CudaNative = native(SCALED_PROGRAM);

function native(prog: CudaProgram): CudaNative {
  return {
    kind: 'native',
    run(ctx, args, scalars) {
      const logits = args[0]!;
      const p = xentParams(logits.desc, scalars);
      const vec = vectorWidth(logits.desc.dtype, p.padded, [logits]);
      // Long rows (GPT-2's 50304 bf16 = 6288 vectors) get 1024 threads: two blocks per SM keep about
      // 2·SMs rows in flight (26 MB on an H200), so sweep 2 re-reads its row from L2, not DRAM.
      const vectors = p.padded / vec;
      const block = vectors >= 4096 ? 1024 : vectors >= 512 ? 256 : 128;
      const launch: XentLaunch = {
        rows: p.rows,
        padded: p.padded,
        vocab: p.vocab,
        gradScale: p.gradScale,
        backward: p.backward ? 1 : 0,
        vec,
        block,
      };
      ctx.launch(prog, args, launch as unknown as Scalars);
    },
  };
}
