/**
 * CPU gemm: picks the engine the worker was told to use (ctx.gemmEngine). f16/bf16 are decoded to f32,
 * multiplied by the f32 engine and rounded back once. Every engine covers f32 and f64.
 */
import { TandemError } from '../../core/errors.js';
import type { CpuArg, CpuKernel, CpuKernelContext, Gemm } from '../../devices/cpu/kernel-api.js';
import { wasmGemm, wasmSgemm } from '../../devices/cpu/wasm/gemm-wasm.js';
import { encodeHalf, floatCopyOf, isHalf, type FloatArray } from '../common/cpu-float.js';
import { gemmDims, gemmParams, type GemmParams } from './params.js';
import { type GemmCall, gemmTs, scaleC } from './ts-engine.js';

type Sgemm = Gemm<Float32Array>;

function requireBlas(ctx: CpuKernelContext): NonNullable<CpuKernelContext['blas']> {
  if (ctx.blas === null) {
    throw new TandemError(
      'TANDEM_ERR_DEVICE_UNAVAILABLE',
      'gemm: this worker was set to the "openblas" engine but OpenBLAS did not load in it',
    );
  }
  return ctx.blas;
}

function f32Engine(ctx: CpuKernelContext): Sgemm | null {
  if (ctx.gemmEngine === 'openblas') {
    const blas = requireBlas(ctx);
    return (...xs) => blas.sgemm(...xs);
  }
  if (ctx.gemmEngine === 'wasm') return wasmSgemm();
  return null;
}

function runF32(ctx: CpuKernelContext, g: GemmCall, a: Float32Array, b: Float32Array, c: Float32Array): void {
  const sgemm = f32Engine(ctx);
  if (sgemm === null) {
    gemmTs(g, a, b, c);
    return;
  }
  const lda = g.transA ? g.m : g.k;
  const ldb = g.transB ? g.k : g.n;
  sgemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, a, lda, b, ldb, g.beta, c, g.n);
}

function runF64(ctx: CpuKernelContext, g: GemmCall, a: Float64Array, b: Float64Array, c: Float64Array): void {
  if (ctx.gemmEngine === 'ts') {
    gemmTs(g, a, b, c);
    return;
  }
  const lda = g.transA ? g.m : g.k;
  const ldb = g.transB ? g.k : g.n;
  const engine = ctx.gemmEngine === 'openblas' ? requireBlas(ctx) : wasmGemm();
  engine.dgemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, a, lda, b, ldb, g.beta, c, g.n);
}

/**
 * One f32 or f64 gemm on whole arrays with the worker's engine (the arrays' type picks the precision),
 * k = 0 included: the entry the fused ops (src/kernels/linear*) build on.
 */
export function floatGemm(
  ctx: CpuKernelContext,
  g: GemmCall,
  a: FloatArray,
  b: FloatArray,
  c: FloatArray,
): void {
  if (g.m === 0 || g.n === 0) return;
  if (g.k === 0) scaleC(c, g.m * g.n, g.beta);
  else if (c instanceof Float64Array) runF64(ctx, g, a as Float64Array, b as Float64Array, c);
  else runF32(ctx, g, a as Float32Array, b as Float32Array, c);
}

function call(args: readonly CpuArg[], p: GemmParams): GemmCall {
  const { m, n, k } = gemmDims(args[0]!.desc, args[1]!.desc, p);
  return { m, n, k, alpha: p.alpha, beta: p.beta, transA: p.transA, transB: p.transB };
}

export const gemmCpu: CpuKernel = (args, scalars, ctx) => {
  const [a, b, c] = args as [CpuArg, CpuArg, CpuArg];
  const g = call(args, gemmParams(scalars));
  if (g.m === 0 || g.n === 0) return;
  const dtype = c.desc.dtype;
  if (isHalf(dtype)) {
    // beta = 0 never reads C, so start from zeros rather than decoding whatever C holds.
    const fc = g.beta === 0 ? new Float32Array(g.m * g.n) : (floatCopyOf(c) as Float32Array);
    if (g.k === 0) scaleC(fc, g.m * g.n, g.beta);
    else runF32(ctx, g, floatCopyOf(a) as Float32Array, floatCopyOf(b) as Float32Array, fc);
    encodeHalf(dtype, fc, c.data as Uint16Array);
    return;
  }
  if (g.k === 0) {
    // BLAS rejects lda = 0; C = beta * C is all there is to do.
    scaleC(c.data as FloatArray, g.m * g.n, g.beta);
    return;
  }
  if (dtype === 'f64') runF64(ctx, g, a.data as Float64Array, b.data as Float64Array, c.data as Float64Array);
  else runF32(ctx, g, a.data as Float32Array, b.data as Float32Array, c.data as Float32Array);
};
