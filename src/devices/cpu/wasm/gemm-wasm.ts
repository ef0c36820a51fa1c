/**
 * The WebAssembly SIMD f32 GEMM engine (used when OpenBLAS is absent). One instance per worker thread,
 * created on first use from gemm-f32.wasm (built by `npm run build:wasm`), over its own shared
 * WebAssembly.Memory laid out as [workspace | staging].
 *
 * Tensors live in the runtime's SharedArrayBuffers, which a wasm instance cannot address, so operands
 * are copied in (row by row, i.e. memcpy) and C copied back. Measured at n = 512 the copies cost about
 * 2% of the multiply (bench/cpu-gemm.ts prints both), so computing in place on tensors allocated inside
 * the wasm memory is supported (`sgemmInPlace`) but not needed for speed. Problems larger than the
 * staging budget are cut into blocks of C rows x C columns, each with the full k.
 */
import { readFileSync } from 'node:fs';
import { TandemError } from '../../../core/errors.js';
import type { CpuBlas } from '../kernel-api.js';
import { WASM_PAGE_BYTES, type WasmMemory, wasmApi } from './wasm-api.js';

/** Staging budget in f32 elements (256 MiB): A, B and C blocks together. */
const STAGING_ELEMENTS = 64 * 1024 * 1024;

type RawSgemm = (
  ta: number,
  tb: number,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: number,
  lda: number,
  b: number,
  ldb: number,
  beta: number,
  c: number,
  ldc: number,
  work: number,
) => void;

export const WASM_GEMM_FILE = new URL('./gemm-f32.wasm', import.meta.url);

export class WasmGemm {
  /** Byte offset where staging (or in-place tensors) may start: after the kernel's workspace. */
  readonly dataOffset: number;

  constructor(
    readonly memory: WasmMemory,
    private readonly raw: RawSgemm,
    workspaceBytes: number,
    /** Staging budget in f32 elements; larger problems are cut into blocks (tests lower it). */
    private readonly stagingElements = STAGING_ELEMENTS,
  ) {
    this.dataOffset = Math.ceil(workspaceBytes / 64) * 64;
  }

  /** Grows the memory so that it holds at least `bytes`. */
  ensureBytes(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes <= have) return;
    try {
      this.memory.grow(Math.ceil((bytes - have) / WASM_PAGE_BYTES));
    } catch (e) {
      throw new TandemError(
        'TANDEM_ERR_OUT_OF_MEMORY',
        `wasm gemm: cannot grow its memory to ${bytes} bytes`,
        { bytes },
        { cause: e },
      );
    }
  }

  /** Operands already inside `memory` (views over memory.buffer): no copies. */
  sgemmInPlace: CpuBlas['sgemm'] = (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) => {
    this.raw(+ta, +tb, m, n, k, alpha, a.byteOffset, lda, b.byteOffset, ldb, beta, c.byteOffset, ldc, 0);
  };

  /** Row-major sgemm on any Float32Arrays, staging operands through the wasm memory. */
  sgemm: CpuBlas['sgemm'] = (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) => {
    if (m === 0 || n === 0) return;
    let block = Math.max(m, n);
    if (m * k + k * n + m * n > this.stagingElements) {
      block = Math.max(64, Math.floor(Math.sqrt(k * k + this.stagingElements) - k));
    }
    for (let i0 = 0; i0 < m; i0 += block) {
      for (let j0 = 0; j0 < n; j0 += block) {
        this.sgemmBlock(
          ta,
          tb,
          i0,
          Math.min(block, m - i0),
          j0,
          Math.min(block, n - j0),
          k,
          alpha,
          a,
          lda,
          b,
          ldb,
          beta,
          c,
          ldc,
        );
      }
    }
  };

  private sgemmBlock(
    ta: boolean,
    tb: boolean,
    i0: number,
    mb: number,
    j0: number,
    nb: number,
    k: number,
    alpha: number,
    a: Float32Array,
    lda: number,
    b: Float32Array,
    ldb: number,
    beta: number,
    c: Float32Array,
    ldc: number,
  ): void {
    const aAt = this.dataOffset;
    const bAt = aAt + align16(4 * mb * k);
    const cAt = bAt + align16(4 * k * nb);
    this.ensureBytes(cAt + 4 * mb * nb);
    const heap = new Float32Array(this.memory.buffer);
    // op(A) rows i0.. as stored: A [m,k] rows, or A [k,m] column slices (the kernel reads either).
    const aLd = ta ? mb : k;
    if (ta) copyRows(a, lda, 0, i0, k, mb, heap, aAt / 4);
    else copyRows(a, lda, i0, 0, mb, k, heap, aAt / 4);
    const bLd = tb ? k : nb;
    if (tb) copyRows(b, ldb, j0, 0, nb, k, heap, bAt / 4);
    else copyRows(b, ldb, 0, j0, k, nb, heap, bAt / 4);
    // beta = 0: the kernel clears C itself, so its old contents need not come in.
    if (beta !== 0) copyRows(c, ldc, i0, j0, mb, nb, heap, cAt / 4);
    this.raw(+ta, +tb, mb, nb, k, alpha, aAt, aLd, bAt, bLd, beta, cAt, nb, 0);
    for (let i = 0; i < mb; i++)
      c.set(heap.subarray(cAt / 4 + i * nb, cAt / 4 + (i + 1) * nb), (i0 + i) * ldc + j0);
  }
}

function align16(bytes: number): number {
  return Math.ceil(bytes / 16) * 16;
}

/** Copies rows r0..r0+rows, columns c0..c0+cols of a row-major matrix into contiguous rows at `at`. */
function copyRows(
  src: Float32Array,
  ld: number,
  r0: number,
  c0: number,
  rows: number,
  cols: number,
  heap: Float32Array,
  at: number,
): void {
  if (ld === cols && c0 === 0) {
    heap.set(src.subarray(r0 * ld, (r0 + rows) * ld), at);
    return;
  }
  for (let r = 0; r < rows; r++) {
    const from = (r0 + r) * ld + c0;
    heap.set(src.subarray(from, from + cols), at + r * cols);
  }
}

export type WasmGemmLoad =
  { readonly gemm: WasmGemm; readonly reason?: undefined } | { readonly gemm: null; readonly reason: string };

/** Compiles and instantiates the engine from `file`; never throws, says why it failed. */
export function loadWasmGemm(file: URL = WASM_GEMM_FILE, stagingElements = STAGING_ELEMENTS): WasmGemmLoad {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    return {
      gemm: null,
      reason: `cannot read ${file.pathname} (run \`npm run build:wasm\`): ${(e as Error).message}`,
    };
  }
  try {
    const module = new wasmApi.Module(bytes);
    const memory = new wasmApi.Memory({ initial: 1, maximum: 65536, shared: true });
    const instance = new wasmApi.Instance(module, { env: { memory } });
    const workspaceBytes = (instance.exports.workspace_bytes as () => number)();
    const gemm = new WasmGemm(memory, instance.exports.sgemm as RawSgemm, workspaceBytes, stagingElements);
    gemm.ensureBytes(gemm.dataOffset);
    return { gemm };
  } catch (e) {
    return {
      gemm: null,
      reason: `WebAssembly SIMD GEMM failed to load from ${file.pathname}: ${(e as Error).message}`,
    };
  }
}

let loaded: WasmGemmLoad | null = null;

/** This thread's engine (compiled once per worker); throws TANDEM_ERR_DEVICE_UNAVAILABLE with the reason. */
export function wasmSgemm(): CpuBlas['sgemm'] {
  loaded ??= loadWasmGemm();
  if (loaded.gemm === null) throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `gemm: ${loaded.reason}`);
  return loaded.gemm.sgemm;
}

/** Whether the engine can load here, and why not (for backend status and test skips). */
export function wasmGemmStatus(): { readonly available: boolean; readonly reason?: string } {
  loaded ??= loadWasmGemm();
  return loaded.gemm === null ? { available: false, reason: loaded.reason } : { available: true };
}
