/**
 * The worker's GEMM engine (ctx.gemmEngine) as one function per precision, for kernels that run
 * GEMMs on contiguous row-major buffers of their own (im2col columns, per-image slices).
 */
import { TandemError } from '../../core/errors.js';
import type { CpuKernelContext, Gemm } from '../../devices/cpu/kernel-api.js';
import { wasmGemm } from '../../devices/cpu/wasm/gemm-wasm.js';
import type { FloatArray } from '../common/cpu-float.js';
import { gemmTs } from '../gemm/ts-engine.js';

/** C[m,n] = alpha·op(A)·op(B) + beta·C on contiguous row-major operands (beta = 0 never reads C). */
export type DenseGemm<T extends FloatArray> = (
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: T,
  b: T,
  beta: number,
  c: T,
) => void;

function blasOf(op: string, ctx: CpuKernelContext): NonNullable<CpuKernelContext['blas']> {
  if (ctx.blas === null) {
    throw new TandemError(
      'TANDEM_ERR_DEVICE_UNAVAILABLE',
      `${op}: this worker was set to the "openblas" engine but OpenBLAS did not load in it`,
    );
  }
  return ctx.blas;
}

function tsGemm<T extends FloatArray>(): DenseGemm<T> {
  return (transA, transB, m, n, k, alpha, a, b, beta, c) =>
    gemmTs({ m, n, k, alpha, beta, transA, transB }, a, b, c);
}

function wrap<T extends FloatArray>(call: Gemm<T>): DenseGemm<T> {
  return (transA, transB, m, n, k, alpha, a, b, beta, c) => {
    if (m === 0 || n === 0) return;
    if (k === 0) {
      // BLAS rejects a leading dimension of 0; C = beta·C is all there is.
      if (beta === 0) c.fill(0, 0, m * n);
      else for (let i = 0; i < m * n; i++) c[i]! *= beta;
      return;
    }
    call(transA, transB, m, n, k, alpha, a, transA ? m : k, b, transB ? k : n, beta, c, n);
  };
}

/** The engine for the compute type: f64 for f64 tensors, f32 for f32/f16/bf16. */
export function denseGemm(op: string, ctx: CpuKernelContext, f64: true): DenseGemm<Float64Array>;
export function denseGemm(op: string, ctx: CpuKernelContext, f64: false): DenseGemm<Float32Array>;
export function denseGemm(op: string, ctx: CpuKernelContext, f64: boolean): DenseGemm<FloatArray> {
  if (ctx.gemmEngine === 'ts') return tsGemm();
  const engine = ctx.gemmEngine === 'openblas' ? blasOf(op, ctx) : wasmGemm();
  return (f64 ? wrap(engine.dgemm) : wrap(engine.sgemm)) as DenseGemm<FloatArray>;
}
