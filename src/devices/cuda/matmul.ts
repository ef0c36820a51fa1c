/**
 * ctx.matmul: a row-major matmul with a fused epilogue through cuBLASLt. cuBLASLt is column-major, so
 * row-major C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ with the operands swapped (as ctx.gemm
 * does): the row-major bias over columns of C is cuBLASLt's bias over rows of D, the aux matrix keeps
 * C's layout (leading dimension n), and cuBLASLt's BGRADB (a reduction of its B, i.e. of the row-major
 * A) gives the row sums of op(A).
 */
import { bytesPerElement, type DType } from '../../core/dtype.js';
import { CUBLAS_WORKSPACE_BYTES, type CudaContext } from './context.js';
import { CUBLAS_COMPUTE, CUBLAS_OP, CUDA_R } from './ffi/cublas.js';
import { LT_EPILOGUE, type Tuner } from './ffi/cublaslt.js';
import type { CudaMatmulEpilogue, CudaMatmulRequest } from './kernel-api.js';
import { autotuneEnabled, fastestAlgo, TUNE_MIN_FLOP, tunable, type Span } from './lt-autotune.js';

const EPILOGUE: Record<CudaMatmulEpilogue, number> = {
  none: LT_EPILOGUE.default,
  bias: LT_EPILOGUE.bias,
  gelu_aux_bias: LT_EPILOGUE.geluAuxBias,
  dgelu: LT_EPILOGUE.dgelu,
  bgrad: LT_EPILOGUE.bgradb,
};

const DATA_TYPE: Partial<Record<string, number>> = { f32: CUDA_R.f32, f16: CUDA_R.f16, bf16: CUDA_R.bf16 };

/** The largest power of two (up to 256) dividing a device address: what the heuristic may assume. */
function alignment(ptr: number): number {
  let a = 1;
  while (a < 256 && ptr % (a * 2) === 0) a *= 2;
  return a;
}

const alpha = new Float32Array(1);
const beta = new Float32Array(1);

const AUTOTUNE = autotuneEnabled();
/** One tuner per context and stream, made once (a closure per call would be garbage on the hot path). */
const tuners = new WeakMap<CudaContext, Map<number, Tuner>>();

function tunerFor(context: CudaContext, stream: number): Tuner {
  let byStream = tuners.get(context);
  if (!byStream) tuners.set(context, (byStream = new Map()));
  let t = byStream.get(stream);
  if (!t) {
    t = (candidates, run) => fastestAlgo(context.driver, stream, candidates, run);
    byStream.set(stream, t);
  }
  return t;
}

/** Row-major operands of one (unbatched) matmul: A m×k, B k×n, C m×n, a bias vector and an aux m×n. */
export interface MatmulOperands {
  readonly dtype: DType;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly beta: number;
  readonly a: number;
  readonly b: number;
  readonly c: number;
  readonly bias?: number;
  readonly aux?: number;
}

/**
 * TANDEM_GEMM_VIA_LT=0: plain 16-bit gemms stay on cublasGemmEx unless calibration chose cuBLASLt (the
 * A/B knob of `ltTakesGemm`).
 */
const GEMM_VIA_LT = process.env['TANDEM_GEMM_VIA_LT'] !== '0';

/**
 * Whether a plain (epilogue-free) f16/bf16 gemm runs through cuBLASLt with autotuning rather than
 * cublasGemmEx: where its shape is one the tuner takes. cublasGemmEx runs its heuristic's first algorithm;
 * GPT-2's qkv dX (65,536 × 768 × 2,304) took 0.345 ms that way on an H100 against PyTorch's 0.322
 * (bench/RESULTS.md, the twenty-third session). cublasGemmEx stays the candidate to beat (launcher.ts
 * passes it to the tuner), so a shape moves only where a cuBLASLt algorithm measured faster. Decided
 * without regard to graph capture, so a captured step records what its eager run tuned.
 */
export function ltTakesGemm(op: MatmulOperands): boolean {
  return GEMM_VIA_LT && (op.dtype === 'bf16' || op.dtype === 'f16') && ltTunes(op);
}

/** Whether autotuning applies to a matmul's shape and operands (a large product that timing leaves as is). */
function ltTunes(op: MatmulOperands): boolean {
  if (!AUTOTUNE || 2 * op.m * op.n * op.k < TUNE_MIN_FLOP) return false;
  const e = bytesPerElement(op.dtype);
  const inputs: Span[] = [
    { ptr: op.a, bytes: op.m * op.k * e },
    { ptr: op.b, bytes: op.k * op.n * e },
    // The bias is n long ('bias') or m long ('bgrad', written): the longer bounds both.
    { ptr: op.bias ?? 0, bytes: Math.max(op.m, op.n) * e },
    { ptr: op.aux ?? 0, bytes: op.m * op.n * e },
  ];
  return tunable(op.beta, { ptr: op.c, bytes: op.m * op.n * e }, inputs);
}

/**
 * The tuner for a cuBLASLt call, or null where it must keep the heuristic's choice for now: autotuning
 * off, a small product, a stream being captured, or a call that timing runs would change (lt-autotune.ts).
 */
export function ltTunerFor(context: CudaContext, stream: number, op: MatmulOperands): Tuner | null {
  return !context.capturing && ltTunes(op) ? tunerFor(context, stream) : null;
}

export function ltMatmul(context: CudaContext, req: CudaMatmulRequest, stream: number): boolean {
  const lt = context.cublasLt;
  const dataType = DATA_TYPE[req.dtype];
  const { m, n, k, transA, transB, epilogue } = req;
  if (lt === null || dataType === undefined || m === 0 || n === 0 || k === 0) return false;
  const bias = req.bias ?? 0;
  const aux = req.aux ?? 0;
  const needsBias = epilogue === 'bias' || epilogue === 'gelu_aux_bias' || epilogue === 'bgrad';
  const needsAux = epilogue === 'gelu_aux_bias' || epilogue === 'dgelu';
  if (needsBias !== (bias !== 0) || needsAux !== (aux !== 0)) return false;
  // cuBLASLt: the GELU aux leading dimension must be a multiple of 8; keep vectors 16-byte aligned.
  if (needsAux && (n % 8 !== 0 || aux % 16 !== 0)) return false;
  if (needsBias && bias % 16 !== 0) return false;
  const batch = req.batch;
  if (batch !== undefined && (epilogue !== 'none' || batch.count < 1)) return false;
  const lda = transA ? m : k;
  const ldb = transB ? k : n;
  alpha[0] = req.alpha;
  beta[0] = req.beta;
  context.makeCurrent();
  const tuner = batch === undefined ? ltTunerFor(context, stream, req) : null;
  return lt.matmulEpilogue(
    {
      dataType,
      compute: req.precision === 'tf32' && req.dtype === 'f32' ? CUBLAS_COMPUTE.tf32 : CUBLAS_COMPUTE.f32,
      scaleType: CUDA_R.f32,
      ta: transB ? CUBLAS_OP.T : CUBLAS_OP.N,
      tb: transA ? CUBLAS_OP.T : CUBLAS_OP.N,
      m: n,
      n: m,
      k,
      lda: ldb,
      ldb: lda,
      ldc: n,
      epilogue: EPILOGUE[epilogue],
      hasBias: needsBias,
      auxLd: needsAux ? n : 0,
      batchCount: batch?.count ?? 1,
      strideA: batch?.strideB ?? 0,
      strideB: batch?.strideA ?? 0,
      strideC: batch?.strideC ?? 0,
      align: [alignment(req.b), alignment(req.a), alignment(req.c)],
    },
    alpha,
    req.b,
    req.a,
    beta,
    req.c,
    bias,
    aux,
    context.workspace,
    CUBLAS_WORKSPACE_BYTES,
    stream,
    tuner,
  );
}
