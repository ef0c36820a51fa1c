/**
 * CPU attention helpers: one head's q, k, v (or a [B, T, C] row block) gathered into contiguous
 * [T, d] panels so the products run through the worker's GEMM engine (OpenBLAS, wasm SIMD, or the
 * plain TS engine), in f32 for f32/f16/bf16 and f64 for f64.
 */
import type { CpuKernelContext } from '../../devices/cpu/kernel-api.js';
import { wasmGemm } from '../../devices/cpu/wasm/gemm-wasm.js';
import { TandemError } from '../../core/errors.js';
import type { FloatArray } from '../common/cpu-float.js';
import { gemmTs } from '../gemm/ts-engine.js';
import type { AttentionDims } from './params.js';

/** C[m,n] = alpha·op(A)·op(B) + beta·C on packed row-major panels (ld = row length). */
export type PanelGemm = (
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: FloatArray,
  b: FloatArray,
  beta: number,
  c: FloatArray,
) => void;

export function panelGemm(op: string, ctx: CpuKernelContext, f64: boolean): PanelGemm {
  if (ctx.gemmEngine === 'ts') {
    return (transA, transB, m, n, k, alpha, a, b, beta, c) =>
      gemmTs({ m, n, k, alpha, beta, transA, transB }, a, b, c);
  }
  let engine: NonNullable<CpuKernelContext['blas']>;
  if (ctx.gemmEngine === 'openblas') {
    if (ctx.blas === null) {
      throw new TandemError(
        'TANDEM_ERR_DEVICE_UNAVAILABLE',
        `${op}: this worker was set to the "openblas" engine but OpenBLAS did not load in it`,
      );
    }
    engine = ctx.blas;
  } else {
    engine = wasmGemm();
  }
  return (transA, transB, m, n, k, alpha, a, b, beta, c) => {
    const lda = transA ? m : k;
    const ldb = transB ? k : n;
    if (f64) {
      engine.dgemm(
        transA,
        transB,
        m,
        n,
        k,
        alpha,
        a as Float64Array,
        lda,
        b as Float64Array,
        ldb,
        beta,
        c as Float64Array,
        n,
      );
    } else {
      engine.sgemm(
        transA,
        transB,
        m,
        n,
        k,
        alpha,
        a as Float32Array,
        lda,
        b as Float32Array,
        ldb,
        beta,
        c as Float32Array,
        n,
      );
    }
  };
}

export function allocFloat(f64: boolean, n: number): FloatArray {
  return f64 ? new Float64Array(n) : new Float32Array(n);
}

/** Copies head h of part `part` (0 q, 1 k, 2 v) of batch b from packed qkv [B, T, 3C] into dst [T, d]. */
export function gatherQkv(
  d: AttentionDims,
  qkv: FloatArray,
  b: number,
  h: number,
  part: number,
  dst: FloatArray,
): void {
  const hd = d.headDim;
  for (let t = 0; t < d.seq; t++) {
    const src = (b * d.seq + t) * 3 * d.width + part * d.width + h * hd;
    dst.set(qkv.subarray(src, src + hd), t * hd);
  }
}

/** Adds nothing, overwrites: dst packed qkv [B, T, 3C] (part, head h, batch b) := src [T, d]. */
export function scatterQkv(
  d: AttentionDims,
  src: FloatArray,
  b: number,
  h: number,
  part: number,
  qkv: FloatArray,
): void {
  const hd = d.headDim;
  for (let t = 0; t < d.seq; t++) {
    const dst = (b * d.seq + t) * 3 * d.width + part * d.width + h * hd;
    qkv.set(src.subarray(t * hd, (t + 1) * hd), dst);
  }
}

/** Copies head h of batch b from a [B, T, C] tensor into dst [T, d]. */
export function gatherRows(d: AttentionDims, x: FloatArray, b: number, h: number, dst: FloatArray): void {
  const hd = d.headDim;
  for (let t = 0; t < d.seq; t++) {
    const src = (b * d.seq + t) * d.width + h * hd;
    dst.set(x.subarray(src, src + hd), t * hd);
  }
}

/** dst [B, T, C] (head h, batch b) := src [T, d]. */
export function scatterRows(d: AttentionDims, src: FloatArray, b: number, h: number, x: FloatArray): void {
  const hd = d.headDim;
  for (let t = 0; t < d.seq; t++) {
    const dst = (b * d.seq + t) * d.width + h * hd;
    x.set(src.subarray(t * hd, (t + 1) * hd), dst);
  }
}
