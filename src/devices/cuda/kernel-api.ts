/**
 * What a CUDA kernel implementation is. Kernel files (src/kernels/<op>/cuda.ts) import only these types,
 * never koffi: the backend compiles, caches and launches what they describe.
 *
 * Two shapes:
 * - a program: CUDA C source + entry + launch geometry + parameter list, compiled by NVRTC for the
 *   device's arch and cached on disk (key: source, options, arch, NVRTC version). Custom kernels from
 *   users are programs too (set `prelude: false` to compile the source exactly as given);
 * - a native impl: a function that enqueues work through CudaKernelContext (cuBLAS GEMM, several
 *   program launches with scratch memory) on the queue's compute stream.
 */
import type { DType } from '../../core/dtype.js';
import type { Scalars, TensorDesc } from '../device.js';

export type Dim3 = readonly [number, number, number];

/** A kernel parameter, in the order of the CUDA function's signature. */
export type CudaParam =
  | { readonly kind: 'ptr'; readonly arg: number } // device address of args[arg]
  | { readonly kind: 'addr'; readonly value: number } // a raw device address (scratch memory)
  | { readonly kind: 'i32'; readonly value: number }
  | { readonly kind: 'u32'; readonly value: number }
  | { readonly kind: 'i64'; readonly value: number }
  | { readonly kind: 'f32'; readonly value: number }
  | { readonly kind: 'f64'; readonly value: number };

/** What a program sees of a tensor argument while building its launch. */
export interface CudaArgDesc {
  readonly desc: TensorDesc;
}

export interface CudaProgram {
  readonly kind: 'program';
  /** CUDA C source. With `prelude` (default true) the Tandem prelude is prepended (see below). */
  readonly source: string;
  readonly entry: string;
  /**
   * Arguments (indices) holding small results the host reads right after the kernel (at most 64 KiB
   * each): they are copied into pinned memory on the same stream, under the kernel's completion event,
   * so reading them back needs no second GPU round trip.
   */
  readonly readback?: readonly number[];
  /**
   * true: prepend the prelude, which defines for each `dtypes()` name N the storage type `N_t`, the
   * compute type `N_c` (float for f16/bf16/f32, double for f64, int for i32/u8) and `ldN(p, i)` /
   * `stN(p, i, v)` converting loads and stores. false: the source is compiled as is (custom kernels).
   */
  readonly prelude?: boolean;
  /** Type names to bind to dtypes (e.g. { X: 'f16', Y: 'f32' }); part of the compile key. */
  dtypes?(args: readonly CudaArgDesc[], scalars: Scalars): Readonly<Record<string, DType>>;
  /** Preprocessor definitions (e.g. { OP: 3 }); part of the compile key. */
  defines?(args: readonly CudaArgDesc[], scalars: Scalars): Readonly<Record<string, string | number>>;
  grid(args: readonly CudaArgDesc[], scalars: Scalars): Dim3;
  block(args: readonly CudaArgDesc[], scalars: Scalars): Dim3;
  sharedBytes?(args: readonly CudaArgDesc[], scalars: Scalars): number;
  /**
   * The most dynamic shared memory (bytes) `sharedBytes` asks for, when over the 48 KiB a function gets
   * without opting in: set on the function when it is loaded (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
   */
  readonly maxDynamicSharedBytes?: number;
  params(args: readonly CudaArgDesc[], scalars: Scalars): readonly CudaParam[];
}

export type GemmPrecision = 'default' | 'tf32';

/** Row-major GEMM request: C[m,n] = alpha op(A) op(B) + beta C, in device addresses. */
export interface CudaGemmRequest {
  readonly dtype: DType;
  readonly precision: GemmPrecision;
  readonly transA: boolean;
  readonly transB: boolean;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly alpha: number;
  readonly beta: number;
  readonly a: number;
  readonly b: number;
  readonly c: number;
}

/**
 * What cuBLASLt applies to the product, in row-major terms (C[m,n] = alpha·op(A)·op(B) + beta·C):
 * - 'none': nothing;
 * - 'bias': C[i,j] += bias[j] (bias has n elements);
 * - 'gelu_aux_bias': aux[i,j] = C[i,j] + bias[j], then C[i,j] = gelu(aux[i,j]) (tanh form; aux is
 *   [m,n] with leading dimension n, the pre-activation kept for the backward);
 * - 'dgelu': C[i,j] = gelu′(aux[i,j]) · C[i,j] (aux read, [m,n]);
 * - 'bgrad': bias[i] = Σ_q op(A)[i,q] (bias has m elements, written; cuBLASLt's BGRADB, as the
 *   operands are swapped for row-major).
 * bias and aux have the dtype of C.
 */
export type CudaMatmulEpilogue = 'none' | 'bias' | 'gelu_aux_bias' | 'dgelu' | 'bgrad';

/** A strided batch: `count` products, operand p of product i at p + i·strideP (strides in elements). */
export interface CudaMatmulBatch {
  readonly count: number;
  readonly strideA: number;
  readonly strideB: number;
  readonly strideC: number;
}

/** Row-major cuBLASLt matmul with a fused epilogue and an optional strided batch. */
export interface CudaMatmulRequest {
  readonly dtype: DType;
  readonly transA: boolean;
  readonly transB: boolean;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly alpha: number;
  readonly beta: number;
  readonly a: number;
  readonly b: number;
  readonly c: number;
  readonly epilogue: CudaMatmulEpilogue;
  /** Device address of the bias vector ('bias', 'gelu_aux_bias', 'bgrad'); 0 otherwise. */
  readonly bias?: number;
  /** Device address of the aux matrix ('gelu_aux_bias', 'dgelu'); 0 otherwise. */
  readonly aux?: number;
  /** Only with epilogue 'none'. */
  readonly batch?: CudaMatmulBatch;
  /** f32 only: 'tf32' computes on tensor cores with TF32 inputs (default: full f32). */
  readonly precision?: GemmPrecision;
}

/**
 * Row-major dense tile routines with the CPU ops' semantics (src/kernels/{potrf,trsm,syrk}/def.ts);
 * the launcher maps them onto column-major cuBLAS/cuSOLVER calls. Addresses are device pointers.
 */
export type CudaTileRequest =
  /** Lower triangle of the n x n tile a := L with a = L·Lᵀ (upper triangle untouched). */
  | { readonly op: 'potrf'; readonly dtype: 'f32' | 'f64'; readonly n: number; readonly a: number }
  /** b (m x n) := b · L⁻ᵀ, L the lower triangle of the n x n tile a. */
  | {
      readonly op: 'trsm';
      readonly dtype: 'f32' | 'f64';
      readonly m: number;
      readonly n: number;
      readonly a: number;
      readonly b: number;
    }
  /** Lower triangle of c (n x n) := beta·c + alpha·a·aᵀ, a n x k. */
  | {
      readonly op: 'syrk';
      readonly dtype: 'f32' | 'f64';
      readonly n: number;
      readonly k: number;
      readonly alpha: number;
      readonly beta: number;
      readonly a: number;
      readonly c: number;
    };

/** A tensor argument as a native impl sees it: its device address and description. */
export interface CudaArg extends CudaArgDesc {
  readonly ptr: number;
}

export interface CudaKernelContext {
  /** "sm_90" */
  readonly arch: string;
  readonly smCount: number;
  /** cuBLAS GEMM on the queue's compute stream (operands swapped for row-major inside). */
  gemm(req: CudaGemmRequest): void;
  /**
   * cuBLASLt matmul with an epilogue on the compute stream. Returns false, having enqueued nothing,
   * when it cannot run here: no cuBLASLt, f64 (cuBLASLt epilogues need f16/bf16/f32), an empty or
   * k = 0 product, a pointer or leading dimension cuBLASLt does not accept for that epilogue, or no
   * algorithm from its heuristic. The caller then computes the same result another way (ctx.gemm plus
   * programs).
   */
  matmul(req: CudaMatmulRequest): boolean;
  /** Launches a program on the compute stream; params may reference args by index. */
  launch(program: CudaProgram, args: readonly CudaArg[], scalars: Scalars): void;
  /**
   * Device scratch memory valid until this launch's work has finished on the stream (the context
   * returns it to the pool when the launch completes).
   */
  scratch(bytes: number): number;
  /** Device-to-device copy on the compute stream. */
  memcpy(dst: number, src: number, bytes: number): void;
  /**
   * cuBLAS trsm/syrk or cuSOLVER potrf on the compute stream. A potrf that finds the matrix not
   * positive definite fails the launch (TANDEM_ERR_KERNEL_FAILED) when it completes.
   */
  tile(req: CudaTileRequest): void;
}

export interface CudaNative {
  readonly kind: 'native';
  run(ctx: CudaKernelContext, args: readonly CudaArg[], scalars: Scalars): void;
}

export type CudaKernelImpl = CudaProgram | CudaNative;

export function isCudaKernelImpl(x: unknown): x is CudaKernelImpl {
  if (typeof x !== 'object' || x === null) return false;
  const k = (x as { kind?: unknown }).kind;
  return k === 'program' || k === 'native';
}
