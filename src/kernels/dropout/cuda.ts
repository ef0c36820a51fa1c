/**
 * dropout and dropout_backward on CUDA: one thread per Philox block of four elements (mask.ts's
 * layout: group g = ⌊(offset + i)/4⌋ is counter (g mod 2^32, 0, ⌊g/2^32⌋, 0)), so each Philox
 * evaluation serves four elements, as on the CPU. The keep test is the host's integer threshold on
 * word >>> 9: no float comparison, so every backend keeps exactly the same elements.
 */
import { numel } from '../../core/shape.js';
import type { Scalars } from '../../devices/device.js';
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import { BLOCK_DIM, elementwiseGrid } from '../common/cuda.js';
import { accumulateScalar, dropoutParams } from '../common/norm-checks.js';
import { keyFromSeed } from '../mc_common/philox.js';
import { PHILOX_CUDA } from '../mc_common/sources.js';

const SOURCE = `${PHILOX_CUDA}
extern "C" __global__ void tdm_dropout(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    long long offset, unsigned k0, unsigned k1, unsigned threshold, double scale, int accumulate) {
  const long long first = offset >> 2;
  const long long groups = ((offset + n + 3) >> 2) - first;
  const X_c sc = (X_c)scale;
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
       g += (long long)gridDim.x * blockDim.x) {
    const unsigned long long c = (unsigned long long)(first + g);
    const uint4 w = tdm_philox(make_uint4((unsigned)c, 0u, (unsigned)(c >> 32), 0u), k0, k1);
    const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const long long i = (long long)(c * 4ull + (unsigned long long)k) - offset;
      if (i >= 0 && i < n) {
        X_c v = (words[k] >> 9) >= threshold ? ldX(x, i) * sc : (X_c)0;
        if (accumulate) v += ldX(y, i);
        stX(y, i, v);
      }
    }
  }
}
`;

function dropoutProgram(op: 'dropout' | 'dropout_backward'): CudaProgram {
  const groups = (n: number, offset: number): number =>
    Math.floor((offset + n + 3) / 4) - Math.floor(offset / 4);
  return {
    kind: 'program',
    source: SOURCE,
    entry: 'tdm_dropout',
    dtypes: (args) => ({ X: args[0]!.desc.dtype }),
    grid: (args, s) => {
      const n = numel(args[0]!.desc.shape);
      return n === 0 ? [0, 1, 1] : elementwiseGrid(groups(n, dropoutParams(op, s).offset));
    },
    block: () => BLOCK_DIM,
    params: (args, s: Scalars) => {
      const d = dropoutParams(op, s);
      const key = keyFromSeed(d.seed);
      const accumulate = op === 'dropout_backward' && accumulateScalar(op, s);
      return [
        { kind: 'ptr', arg: 0 },
        { kind: 'ptr', arg: 1 },
        { kind: 'i64', value: numel(args[0]!.desc.shape) },
        { kind: 'i64', value: d.offset },
        { kind: 'u32', value: key.k0 },
        { kind: 'u32', value: key.k1 },
        { kind: 'u32', value: d.threshold },
        { kind: 'f64', value: d.scale },
        { kind: 'i32', value: accumulate ? 1 : 0 },
      ];
    },
  };
}

export const dropoutCuda = dropoutProgram('dropout');
export const dropoutBackwardCuda = dropoutProgram('dropout_backward');
