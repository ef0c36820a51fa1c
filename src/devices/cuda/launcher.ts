/**
 * Enqueues kernel implementations on a stream. Program parameters are written into one native
 * parameter block (pointer table + 8-byte value slots) that is reused for every launch: cuLaunchKernel
 * copies the values when it is called, so the hot path allocates nothing and passes only integers to koffi.
 */
import koffi from 'koffi';
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../device.js';
import { CUBLAS_WORKSPACE_BYTES, type CudaContext } from './context.js';
import { CUBLAS_COMPUTE, CUBLAS_OP, CUDA_R } from './ffi/cublas.js';
import { ltMatmul, ltTakesGemm, ltTunerFor } from './matmul.js';
import { runTile, type TileCheck } from './tile-ops.js';
import type {
  CudaArg,
  CudaGemmRequest,
  CudaKernelContext,
  CudaKernelImpl,
  CudaParam,
  CudaProgram,
  Dim3,
} from './kernel-api.js';
import type { ProgramCache } from './program-cache.js';

const MAX_PARAMS = 32;
const SLOT = 8;
const TWO32 = 4294967296;

export class Launcher {
  private readonly block: unknown;
  private readonly blockAddr: number;
  private readonly i32: Int32Array;
  private readonly u32: Uint32Array;
  private readonly f32: Float32Array;
  private readonly f64: Float64Array;
  private readonly alpha32 = new Float32Array(1);
  private readonly beta32 = new Float32Array(1);
  private readonly alpha64 = new Float64Array(1);
  private readonly beta64 = new Float64Array(1);

  constructor(
    private readonly context: CudaContext,
    private readonly programs: ProgramCache,
    readonly smCount: number,
  ) {
    const bytes = MAX_PARAMS * SLOT * 2;
    this.block = koffi.alloc('uint8_t', bytes);
    this.blockAddr = Number(koffi.address(this.block));
    const ab = koffi.view(this.block, bytes);
    this.i32 = new Int32Array(ab);
    this.u32 = new Uint32Array(ab);
    this.f32 = new Float32Array(ab);
    this.f64 = new Float64Array(ab);
    // The pointer table (first half) points at the value slots (second half) once and for all.
    const values = this.blockAddr + MAX_PARAMS * SLOT;
    for (let i = 0; i < MAX_PARAMS; i++) this.writeU64(i, values + i * SLOT);
  }

  private writeU64(slot: number, v: number): void {
    writeParam64(this.u32, slot, v);
  }

  /**
   * Runs a kernel implementation on `stream`; `scratch` hands out device memory tied to this launch.
   * Returns a check to call once the stream has finished this work (before scratch is released), or
   * null: cuSOLVER reports a failed factorization in device memory, not in its return code.
   */
  run(
    impl: CudaKernelImpl,
    args: readonly CudaArg[],
    scalars: Scalars,
    stream: number,
    scratch: (bytes: number) => number,
  ): TileCheck | null {
    this.context.makeCurrent();
    if (impl.kind === 'program') {
      this.launchProgram(impl, args, scalars, stream);
      return null;
    }
    let check: TileCheck | null = null;
    const ctx: CudaKernelContext = {
      arch: this.programs.arch,
      smCount: this.smCount,
      gemm: (req) => this.gemm(req, stream),
      matmul: (req) => ltMatmul(this.context, req, stream),
      launch: (program, a, s) => this.launchProgram(program, a, s, stream),
      scratch,
      memcpy: (dst, src, bytes) => {
        if (bytes > 0)
          this.context.driver.check(
            this.context.driver.api.cuMemcpyAsync(dst, src, bytes, stream),
            'cuMemcpyAsync(d2d)',
          );
      },
      tile: (req) => {
        const c = runTile(this.context, req, scratch);
        if (c) {
          const prev = check;
          check = prev ? () => prev() ?? c() : c;
        }
      },
    };
    impl.run(ctx, args, scalars);
    return check;
  }

  launchProgram(program: CudaProgram, args: readonly CudaArg[], scalars: Scalars, stream: number): void {
    const p = this.prepare(program, args, scalars);
    if (p) this.launchPrepared(p, args, stream);
  }

  /** Resolves a program launch (function, geometry, parameters) without enqueueing it; null: empty grid. */
  prepare(program: CudaProgram, args: readonly CudaArg[], scalars: Scalars): PreparedLaunch | null {
    this.context.makeCurrent();
    const fn = this.programs.function(program, args, scalars);
    const grid = program.grid(args, scalars);
    if (grid[0] * grid[1] * grid[2] === 0) return null; // empty tensors: nothing to launch
    return {
      entry: program.entry,
      fn,
      grid,
      block: program.block(args, scalars),
      shmem: program.sharedBytes?.(args, scalars) ?? 0,
      params: program.params(args, scalars),
    };
  }

  /** Enqueues a prepared launch on `stream` (also inside a stream capture, which records it instead). */
  launchPrepared(p: PreparedLaunch, args: readonly CudaArg[], stream: number): void {
    this.writeParams(p.params, args);
    const [gx, gy, gz] = p.grid;
    const [bx, by, bz] = p.block;
    const d = this.context.driver;
    const rc = d.api.cuLaunchKernel(p.fn, gx, gy, gz, bx, by, bz, p.shmem, stream, this.blockAddr, 0);
    if (rc !== 0) d.check(rc, `cuLaunchKernel(${p.entry})`);
  }

  private writeParams(params: readonly CudaParam[], args: readonly CudaArg[]): void {
    if (params.length > MAX_PARAMS) {
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `a CUDA program takes at most ${MAX_PARAMS} parameters, got ${params.length}`,
      );
    }
    const base = MAX_PARAMS; // value slots start after the pointer table
    for (let i = 0; i < params.length; i++) {
      const p = params[i]!;
      const slot = base + i;
      switch (p.kind) {
        case 'ptr': {
          const a = args[p.arg];
          if (!a)
            throw new TandemError(
              'TANDEM_ERR_INVALID_ARGUMENT',
              `CUDA parameter ${i} refers to argument ${p.arg}, which does not exist`,
            );
          this.writeU64(slot, a.ptr);
          break;
        }
        case 'addr':
        case 'i64':
          this.writeU64(slot, p.value);
          break;
        case 'i32':
          this.i32[slot * 2] = p.value;
          break;
        case 'u32':
          this.u32[slot * 2] = p.value;
          break;
        case 'f32':
          this.f32[slot * 2] = p.value;
          break;
        case 'f64':
          this.f64[slot] = p.value;
          break;
      }
    }
  }

  /** Row-major C = op(A) op(B): cuBLAS is column-major, so compute C^T = op(B)^T op(A)^T by swapping. */
  /** Which library runs GEMM per dtype key ('bf16', 'tf32', ...); calibration picks the faster one. */
  gemmEngines: Partial<Record<string, GemmEngine>> = {};

  /** The cuBLAS handle is bound to the compute stream; cuBLASLt takes the stream per call. */
  gemm(req: CudaGemmRequest, stream: number): void {
    const { m, n, k, transA, transB } = req;
    let dataType: number;
    let compute: number;
    switch (req.dtype) {
      case 'f32':
        dataType = CUDA_R.f32;
        compute = req.precision === 'tf32' ? CUBLAS_COMPUTE.tf32 : CUBLAS_COMPUTE.f32;
        break;
      case 'f64':
        dataType = CUDA_R.f64;
        compute = CUBLAS_COMPUTE.f64;
        break;
      case 'f16':
        dataType = CUDA_R.f16;
        compute = CUBLAS_COMPUTE.f32;
        break;
      case 'bf16':
        dataType = CUDA_R.bf16;
        compute = CUBLAS_COMPUTE.f32;
        break;
      default:
        throw new TandemError(
          'TANDEM_ERR_DTYPE',
          `gemm on CUDA supports f32, f64, f16 and bf16, not ${req.dtype}`,
        );
    }
    if (m === 0 || n === 0) return;
    const f64 = req.dtype === 'f64';
    const alpha = f64 ? this.alpha64 : this.alpha32;
    const beta = f64 ? this.beta64 : this.beta32;
    alpha[0] = req.alpha;
    beta[0] = req.beta;
    const lda = transA ? m : k;
    const ldb = transB ? k : n;
    const lt = this.context.cublasLt;
    const calibrated = this.gemmEngines[gemmKey(req)] === 'cublaslt';
    if (lt && k > 0 && (calibrated || ltTakesGemm(req))) {
      // Same operand swap as below; cuBLASLt takes the shape once and caches its plan. A shape routed
      // here for its tuner (not by calibration) has cublasGemmEx as the first candidate to beat, so
      // tuning never leaves it slower than before (the cuBLAS handle runs on the compute stream only).
      const tuner = ltTunerFor(this.context, stream, req);
      const alternative =
        tuner === null || calibrated || stream !== this.context.streams.compute
          ? null
          : () => {
              this.gemmEx(req, dataType, compute, alpha, beta);
              return 0;
            };
      const ran = lt.matmul(
        {
          dataType,
          compute,
          scaleType: f64 ? CUDA_R.f64 : CUDA_R.f32,
          ta: transB ? CUBLAS_OP.T : CUBLAS_OP.N,
          tb: transA ? CUBLAS_OP.T : CUBLAS_OP.N,
          m: n,
          n: m,
          k,
          lda: Math.max(ldb, 1),
          ldb: Math.max(lda, 1),
          ldc: Math.max(n, 1),
        },
        alpha,
        req.b,
        req.a,
        beta,
        req.c,
        this.context.workspace,
        CUBLAS_WORKSPACE_BYTES,
        stream,
        tuner,
        alternative,
      );
      if (ran) return;
    }
    this.gemmEx(req, dataType, compute, alpha, beta);
  }

  /** The row-major product through cublasGemmEx on the compute stream (alpha, beta already set). */
  private gemmEx(
    req: CudaGemmRequest,
    dataType: number,
    compute: number,
    alpha: Float32Array | Float64Array,
    beta: Float32Array | Float64Array,
  ): void {
    const { m, n, k, transA, transB } = req;
    this.context.cublas.gemmEx(
      this.context.blas(),
      transB ? CUBLAS_OP.T : CUBLAS_OP.N,
      transA ? CUBLAS_OP.T : CUBLAS_OP.N,
      n,
      m,
      k,
      alpha,
      req.b,
      Math.max(transB ? k : n, 1),
      req.a,
      Math.max(transA ? m : k, 1),
      beta,
      req.c,
      Math.max(n, 1),
      dataType,
      compute,
    );
  }
}

/** A program launch resolved to its CUfunction, geometry and parameter values. */
export interface PreparedLaunch {
  readonly entry: string;
  readonly fn: number;
  readonly grid: Dim3;
  readonly block: Dim3;
  readonly shmem: number;
  readonly params: readonly CudaParam[];
}

/** Longest signature one launch writes (see writeSignature). */
export const SIGNATURE_MAX = 9 + MAX_PARAMS;

/**
 * Writes everything that decides what a prepared launch does — function, geometry, shared memory and
 * every parameter value (device addresses for tensors) — as numbers at `out[at...]`; returns how many.
 * Two launches with equal signatures do the same thing, so a recorded graph can stand in for them.
 */
export function writeSignature(
  p: PreparedLaunch,
  args: readonly CudaArg[],
  out: Float64Array,
  at: number,
): number {
  out[at] = p.fn;
  out[at + 1] = p.grid[0];
  out[at + 2] = p.grid[1];
  out[at + 3] = p.grid[2];
  out[at + 4] = p.block[0];
  out[at + 5] = p.block[1];
  out[at + 6] = p.block[2];
  out[at + 7] = p.shmem;
  const params = p.params;
  out[at + 8] = params.length;
  for (let i = 0; i < params.length; i++) {
    const q = params[i]!;
    out[at + 9 + i] = q.kind === 'ptr' ? (args[q.arg]?.ptr ?? -1) : q.value;
  }
  return 9 + params.length;
}

export type GemmEngine = 'cublas' | 'cublaslt';

/** The key GEMM engines and peak rates are recorded under: the dtype, or 'tf32' for f32 on tensor cores. */
export function gemmKey(req: Pick<CudaGemmRequest, 'dtype' | 'precision'>): string {
  return req.dtype === 'f32' && req.precision === 'tf32' ? 'tf32' : req.dtype;
}

/**
 * A 64-bit kernel parameter into slot `slot` (two u32 words, little-endian) of a parameter buffer: an
 * address or a safe integer, negative ones in two's complement. Formed word by word: 2^64 + v in a
 * double rounds for |v| < 2^11 (−2 became 2^64, which wrapped to 0), so negative strides arrived as 0.
 */
export function writeParam64(u32: Uint32Array, slot: number, v: number): void {
  if (v >= 0) {
    u32[slot * 2] = v % TWO32;
    u32[slot * 2 + 1] = Math.floor(v / TWO32);
    return;
  }
  const m = -v; // |v| = hi·2^32 + lo; −|v| = ~|v| + 1
  const lo = m % TWO32;
  const hi = Math.floor(m / TWO32);
  u32[slot * 2] = (TWO32 - lo) % TWO32;
  u32[slot * 2 + 1] = lo === 0 ? (TWO32 - hi) % TWO32 : TWO32 - 1 - hi;
}
