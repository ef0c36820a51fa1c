/**
 * adamw and adamw_mixed on CUDA: one element-wise program, torch's AdamW formulas in torch's order, in
 * f32 (f64 for f64 parameters). The squared norm is read on the device; the per-step constants
 * (bias corrections, step size) are formed on the host in double exactly as torch forms them in Python.
 * adamw_mixed (MIXED 1) updates the f32 master and stores p = round(master).
 */
import type { CudaArgDesc, CudaParam, CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, count, elementwiseGrid } from '../common/cuda.js';
import { GRAD_CLIP_CUDA, gradClipParams } from '../optim_common/cuda.js';
import { adamwConstants, adamwHyperParams, adamwParams } from './params.js';

const SOURCE = `${MATH_OVERLOADS}${GRAD_CLIP_CUDA}
extern "C" __global__ void tdm_adamw(
#if MIXED
    H_t* __restrict__ p, const G_t* __restrict__ g, W_t* __restrict__ m, W_t* __restrict__ v,
    W_t* __restrict__ w, const N_t* __restrict__ norm,
#else
    W_t* __restrict__ w, const G_t* __restrict__ g, W_t* __restrict__ m, W_t* __restrict__ v,
    const N_t* __restrict__ norm,
#endif
#if HYPER
    const double* __restrict__ hyper,
#endif
    double decay, double lerpWeight, double beta2, double oneMinusBeta2, double negStepSize,
    double bias2Sqrt, double eps, double gradScale, double maxNorm, int skip, long long n) {
#if HYPER
  // decay holds the weight decay here; 1 - lr*wd in round-to-nearest steps, never fused into an fma,
  // as the host forms it for adamw.
  decay = __dsub_rn(1.0, __dmul_rn(hyper[0], decay));
  negStepSize = -hyper[1];
  bias2Sqrt = hyper[2];
  gradScale = hyper[3];
#endif
  double clipD;
  if (!tdm_grad_clip((double)ldN(norm, 0), gradScale, maxNorm, skip, &clipD)) return;
  const W_c scale = (W_c)gradScale, clip = (W_c)clipD;
  const W_c dec = (W_c)decay, lw = (W_c)lerpWeight, b2 = (W_c)beta2, c2 = (W_c)oneMinusBeta2;
  const W_c ns = (W_c)negStepSize, bs = (W_c)bias2Sqrt, ep = (W_c)eps;
  const bool lowWeight = lerpWeight < 0.5;
  ${GRID_STRIDE} {
    const W_c gi = (W_c)ldG(g, i) * scale * clip;
    const W_c mi = ldW(m, i);
    const W_c diff = gi - mi;
    // torch.lerp: start + w·(end − start) for w < 0.5, else end − (end − start)·(1 − w)
    const W_c m1 = lowWeight ? mi + lw * diff : gi - diff * ((W_c)1 - lw);
    const W_c v1 = ldW(v, i) * b2 + c2 * gi * gi;
    stW(m, i, m1);
    stW(v, i, v1);
    const W_c w1 = ldW(w, i) * dec + ns * (m1 / (m_sqrt(v1) / bs + ep));
    stW(w, i, w1);
#if MIXED
    stH(p, i, w1);
#endif
  }
}
`;

/**
 * adamw (mixed: adamw_mixed) or, with `hyper`, adamw_hyper (adamw_mixed_hyper): the same program, the
 * step's lr, bias corrections and gradScale read from the f64 tensor after `norm` instead of passed by value.
 */
function program(mixed: boolean, hyper: boolean): CudaProgram {
  const op = `${mixed ? 'adamw_mixed' : 'adamw'}${hyper ? '_hyper' : ''}`;
  const normIndex = mixed ? 5 : 4;
  return {
    kind: 'program',
    entry: 'tdm_adamw',
    source: SOURCE,
    dtypes: (args: readonly CudaArgDesc[]) => ({
      W: mixed ? 'f32' : args[0]!.desc.dtype,
      G: args[1]!.desc.dtype,
      N: args[normIndex]!.desc.dtype,
      ...(mixed ? { H: args[0]!.desc.dtype } : {}),
    }),
    defines: () => ({ MIXED: mixed ? 1 : 0, HYPER: hyper ? 1 : 0 }),
    grid: (args) => elementwiseGrid(count(args[0]!)),
    block: () => BLOCK_DIM,
    params(args: readonly CudaArgDesc[], scalars: Scalars): CudaParam[] {
      // With hyper the kernel forms decay from the weight decay and reads the rest (values unused here).
      const s = hyper ? { ...adamwHyperParams(op, scalars), lr: 0, step: 1 } : adamwParams(op, scalars);
      const c = adamwConstants(s);
      const tensors: CudaParam[] = args.map((_, i) => ({ kind: 'ptr', arg: i }));
      return [
        ...tensors,
        { kind: 'f64', value: hyper ? s.weightDecay : c.decay },
        { kind: 'f64', value: c.lerpWeight },
        { kind: 'f64', value: c.beta2 },
        { kind: 'f64', value: c.oneMinusBeta2 },
        { kind: 'f64', value: -c.stepSize },
        { kind: 'f64', value: c.bias2Sqrt },
        { kind: 'f64', value: c.eps },
        ...gradClipParams(s),
        { kind: 'i64', value: count(args[0]!) },
      ];
    },
  };
}

export const adamwCuda = program(false, false);
export const adamwMixedCuda = program(true, false);
export const adamwHyperCuda = program(false, true);
export const adamwMixedHyperCuda = program(true, true);
