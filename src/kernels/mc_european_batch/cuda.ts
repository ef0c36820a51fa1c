/**
 * CUDA mc_european_batch: one launch for a whole batch of options. Block b finds its option (binary
 * search over the terms' firstRow column), takes the same slice of that option's Philox streams as
 * block (b - firstRow) of a one-task mc_european launch, and runs the same device engine
 * (MC_EUROPEAN_DEVICE_CUDA) with the same f32 parameters, so each option's rows match the single-option
 * kernel's bit for bit. The terms come from the host builder (layout.ts); the CPU kernel checks them.
 */
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { MC_EUROPEAN_DEVICE_CUDA } from '../mc_common/cuda.js';
import { PHILOX_CUDA } from '../mc_common/sources.js';
import { TERM, TERM_COLUMNS } from './layout.js';

const THREADS = 256;

export const MC_EUROPEAN_BATCH_CUDA_SOURCE = `${PHILOX_CUDA}${MC_EUROPEAN_DEVICE_CUDA}
#define TDM_COLS ${TERM_COLUMNS}
extern "C" __global__ void __launch_bounds__(${THREADS}, 8) tdm_mc_european_batch(
    const double* __restrict__ terms, OUT_T* __restrict__ out, int options, long long total_rows) {
  const long long row = blockIdx.x;
  // The option owning this row: the last one whose first row is <= row.
  int lo = 0, hi = options - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if ((long long)terms[mid * TDM_COLS + ${TERM.firstRow}] <= row) lo = mid; else hi = mid - 1;
  }
  const double* t = terms + lo * TDM_COLS;
  const long long r0 = (long long)t[${TERM.firstRow}];
  const long long r1 = lo + 1 < options ? (long long)t[TDM_COLS + ${TERM.firstRow}] : total_rows;
  const long long samples = (long long)t[${TERM.samples}];
  const long long streams = (samples + 3) >> 2;
  const long long per = (streams + (r1 - r0) - 1) / (r1 - r0);
  const long long b0 = min(streams, (row - r0) * per);
  const long long b1 = min(streams, (row - r0 + 1) * per);
  // seed = k0 + k1 2^32, exact in double up to 2^53.
  const double seed = t[${TERM.seed}];
  const unsigned k1 = (unsigned)floor(seed * 2.3283064365386963e-10);
  const unsigned k0 = (unsigned)(seed - (double)k1 * 4294967296.0);
  const float spot = (float)t[${TERM.spot}], strike = (float)t[${TERM.strike}];
  const float mu = (float)t[${TERM.mu}], sigma = (float)t[${TERM.sigma}];
  const float sgn = t[${TERM.call}] != 0.0 ? 1.f : -1.f;
  const float sK = -sgn * strike;
  const float scale = sigma * 1.4426950408889634f;
  float a1 = 0.f, a2 = 0.f;
  int cnt = 0;
  const float sA = sgn * spot * expf(mu);
  if (t[${TERM.antithetic}] != 0.0) tdm_eu_run<true>(b0, b1, samples, k0, k1, scale, sA, sK, a1, a2, cnt);
  else tdm_eu_run<false>(b0, b1, samples, k0, k1, scale, sA, sK, a1, a2, cnt);
  tdm_block_sum3f(out, blockIdx.x, a1, a2, cnt);
}`;

export const mcEuropeanBatchCuda: CudaProgram = {
  kind: 'program',
  source: MC_EUROPEAN_BATCH_CUDA_SOURCE,
  entry: 'tdm_mc_european_batch',
  prelude: false,
  // The partial sums are what the host reads next (12 bytes a row): copied back with the kernel.
  readback: [1],
  defines: (args) => ({ OUT_T: args[1]!.desc.dtype === 'f64' ? 'double' : 'float' }),
  grid: (args) => [args[1]!.desc.shape[0]!, 1, 1],
  block: () => [THREADS, 1, 1],
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i32', value: args[0]!.desc.shape[0]! },
    { kind: 'i64', value: args[1]!.desc.shape[0]! },
  ],
};
