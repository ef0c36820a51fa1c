/**
 * Conformance cases of the linear group: every float dtype, shapes that are not multiples of any tile,
 * both activations, overwrite and accumulate. Tolerances follow the gemm cases (4·k·ε of the working
 * precision absolute, 2ε of the storage dtype relative) with room for one tanh in f32.
 */
import { type DType, epsilon } from '../../core/dtype.js';
import type { ConformanceCase } from '../case-types.js';
import { ACT_OPS } from '../activation/ops.js';

const FLOATS: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

/**
 * (m, k, n) of x [m,k]·w [n,k]ᵀ. [37, 72, 48] has k and n multiples of 8, which cuBLASLt's GELU aux
 * matrix needs, so the CUDA run exercises the fused epilogues as well as the fallbacks.
 */
const SHAPES: readonly (readonly [number, number, number])[] = [
  [1, 1, 1],
  [3, 5, 7],
  [17, 33, 9],
  [37, 72, 48],
  [67, 129, 35],
  [130, 70, 260],
];

function work(dtype: DType): number {
  return dtype === 'f64' ? epsilon('f64') : epsilon('f32');
}

function shapesFor(dtype: DType): readonly (readonly [number, number, number])[] {
  return dtype === 'f32' || dtype === 'f64' ? SHAPES : SHAPES.slice(1, 5);
}

/** A sum of `terms` products of inputs ≤ 1 in magnitude, then an activation (tanh ± a few ulp, ×2 cancellation). */
function matmulTol(dtype: DType, terms: number): { rtol: number; atol: number } {
  return {
    rtol: 2 * epsilon(dtype) + 16 * work(dtype),
    atol: 4 * (terms + 1) * work(dtype) + 16 * work(dtype),
  };
}

/**
 * Extra absolute room for the activation of 16-bit results: a fallback applies it to the stored
 * (rounded) pre-activation, and cuBLASLt's GELU epilogues may use the hardware tanh approximation
 * (about 2^-11 relative), which matters where gelu or gelu′ crosses zero. f32/f64 never take those
 * epilogues (the CUDA impls keep them to 16-bit dtypes), so they keep the gemm tolerance.
 */
function activationRoom(dtype: DType): number {
  return dtype === 'f16' || dtype === 'bf16' ? 2 * epsilon(dtype) : 0;
}

/**
 * Extra absolute room for 16-bit products: cuBLAS(Lt) may round partial sums (split-K, epilogues) to
 * the output type before the last addition — PyTorch allows the same by default
 * (allow_bf16_reduced_precision_reduction) — so a result that cancels between terms of size ~1 carries
 * up to about one rounding at magnitude 1, not only at its own (measured on the H200: ≤ 1.3 ulp(1)).
 */
function reductionRoom(dtype: DType, accumulate = false): number {
  return dtype === 'f16' || dtype === 'bf16' ? (accumulate ? 4 : 2) * epsilon(dtype) : 0;
}

function linearCases(dtype: DType): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const [m, k, n] of shapesFor(dtype)) {
    const dims = `${dtype} m${m} k${k} n${n}`;
    const x = { shape: [m, k], dtype };
    const w = { shape: [n, k], dtype };
    const b = { shape: [n], dtype };
    const y = { shape: [m, n], dtype };
    out.push({
      name: `linear ${dims}`,
      op: 'linear',
      args: { x, w, b, y },
      scalars: {},
      rtol: matmulTol(dtype, k).rtol,
      atol: matmulTol(dtype, k).atol + reductionRoom(dtype),
    });
    for (const act of ACT_OPS) {
      out.push({
        name: `linear_act ${act} ${dims}`,
        op: 'linear_act',
        args: { x, w, b, pre: y, y },
        scalars: { act },
        rtol: matmulTol(dtype, k).rtol,
        atol: matmulTol(dtype, k).atol + activationRoom(dtype),
      });
      // dx = act′(pre) ⊙ (dy·w): dy [m,n], w [n,k] (this layer's weight), pre and dx [m,k].
      out.push({
        name: `linear_dx_act ${act} ${dims}`,
        op: 'linear_dx_act',
        args: { dy: y, w, pre: x, dx: x },
        scalars: { act },
        rtol: matmulTol(dtype, 2 * n).rtol,
        atol: matmulTol(dtype, 2 * n).atol + activationRoom(dtype),
      });
    }
    for (const accumulate of [false, true]) {
      out.push({
        name: `linear_dw ${dims}${accumulate ? ' accumulate' : ''}`,
        op: 'linear_dw',
        args: { dy: y, x, dw: w, db: b },
        scalars: { accumulate },
        rtol: matmulTol(dtype, m).rtol,
        atol: matmulTol(dtype, m).atol + reductionRoom(dtype, accumulate),
      });
    }
  }
  return out;
}

function activationCases(dtype: DType): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const rtol = 2 * epsilon(dtype) + 16 * work(dtype);
  for (const shape of [[1], [7, 301]]) {
    for (const op of ACT_OPS) {
      const t = { shape, dtype };
      out.push({
        name: `activation ${op} ${dtype} [${shape}]`,
        op: 'activation',
        args: { x: t, y: t },
        scalars: { op },
        rtol,
        atol: 2 * epsilon(dtype) * 2 ** -6,
      });
      for (const accumulate of [false, true]) {
        out.push({
          name: `activation_backward ${op} ${dtype} [${shape}]${accumulate ? ' accumulate' : ''}`,
          op: 'activation_backward',
          args: { x: t, dy: t, dx: t },
          scalars: { op, accumulate },
          rtol,
          // gelu′ crosses zero near x = -0.75 (a difference of terms ~1), and dx + op′·dy can cancel.
          atol: 16 * work(dtype) + (accumulate ? 4 * epsilon(dtype) : 0),
        });
      }
    }
  }
  return out;
}

/** k = 0: x·wᵀ is empty, so y is the bias broadcast (BLAS rejects k = 0, so every backend special-cases it). */
function emptyInnerCase(): ConformanceCase {
  const dtype = 'f32';
  return {
    name: 'linear f32 k0 (y = b)',
    op: 'linear',
    args: {
      x: { shape: [4, 0], dtype },
      w: { shape: [5, 0], dtype },
      b: { shape: [5], dtype },
      y: { shape: [4, 5], dtype },
    },
    scalars: {},
    rtol: 0,
    atol: 0,
  };
}

export function linearGroupCases(): ConformanceCase[] {
  return [...FLOATS.flatMap((dtype) => [...linearCases(dtype), ...activationCases(dtype)]), emptyInnerCase()];
}
