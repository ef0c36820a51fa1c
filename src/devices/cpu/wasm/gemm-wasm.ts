/**
 * The WebAssembly SIMD GEMM engine (f32 and f64; used when OpenBLAS is absent). One instance per worker
 * thread, created on first use from gemm.wasm (built by `npm run build:wasm`), over its own shared
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

/** Staging budget in elements (A, B and C blocks together): 64 Mi elements, 256 MiB of f32. */
const STAGING_ELEMENTS = 64 * 1024 * 1024;

/** The module's exports sgemm/dgemm: byte offsets into the memory, leading dimensions in elements. */
type RawGemm = (
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

type Floats = Float32Array | Float64Array;

/** Everything that differs between the f32 and f64 paths. */
interface Precision<T extends Floats> {
  readonly raw: RawGemm;
  readonly bytes: number;
  view(buffer: SharedArrayBuffer): T;
}

export const WASM_GEMM_FILE = new URL('./gemm.wasm', import.meta.url);

export class WasmGemm {
  /** Byte offset where staging (or in-place tensors) may start: after the kernel's workspace. */
  readonly dataOffset: number;
  private readonly f32: Precision<Float32Array>;
  private readonly f64: Precision<Float64Array>;

  constructor(
    readonly memory: WasmMemory,
    raw: { readonly sgemm: RawGemm; readonly dgemm: RawGemm },
    workspaceBytes: number,
    /** Staging budget in elements; larger problems are cut into blocks (tests lower it). */
    private readonly stagingElements = STAGING_ELEMENTS,
  ) {
    this.dataOffset = Math.ceil(workspaceBytes / 64) * 64;
    this.f32 = { raw: raw.sgemm, bytes: 4, view: (b) => new Float32Array(b) };
    this.f64 = { raw: raw.dgemm, bytes: 8, view: (b) => new Float64Array(b) };
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
    this.f32.raw(+ta, +tb, m, n, k, alpha, a.byteOffset, lda, b.byteOffset, ldb, beta, c.byteOffset, ldc, 0);
  };

  /** Row-major sgemm on any Float32Arrays, staging operands through the wasm memory. */
  sgemm: CpuBlas['sgemm'] = (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) =>
    this.staged(this.f32, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);

  /** Row-major dgemm on any Float64Arrays, staging operands through the wasm memory. */
  dgemm: CpuBlas['dgemm'] = (ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) =>
    this.staged(this.f64, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);

  private staged<T extends Floats>(
    p: Precision<T>,
    ta: boolean,
    tb: boolean,
    m: number,
    n: number,
    k: number,
    alpha: number,
    a: T,
    lda: number,
    b: T,
    ldb: number,
    beta: number,
    c: T,
    ldc: number,
  ): void {
    if (m === 0 || n === 0) return;
    let block = Math.max(m, n);
    if (m * k + k * n + m * n > this.stagingElements) {
      block = Math.max(64, Math.floor(Math.sqrt(k * k + this.stagingElements) - k));
    }
    for (let i0 = 0; i0 < m; i0 += block) {
      const mb = Math.min(block, m - i0);
      for (let j0 = 0; j0 < n; j0 += block) {
        const nb = Math.min(block, n - j0);
        const eb = p.bytes;
        const aAt = this.dataOffset;
        const bAt = aAt + align16(eb * mb * k);
        const cAt = bAt + align16(eb * k * nb);
        this.ensureBytes(cAt + eb * mb * nb);
        const heap = p.view(this.memory.buffer);
        // op(A) rows i0.. as stored: A [m,k] rows, or A [k,m] column slices (the kernel reads either).
        if (ta) copyRows(a, lda, 0, i0, k, mb, heap, aAt / eb);
        else copyRows(a, lda, i0, 0, mb, k, heap, aAt / eb);
        if (tb) copyRows(b, ldb, j0, 0, nb, k, heap, bAt / eb);
        else copyRows(b, ldb, 0, j0, k, nb, heap, bAt / eb);
        // beta = 0: the kernel clears C itself, so its old contents need not come in.
        if (beta !== 0) copyRows(c, ldc, i0, j0, mb, nb, heap, cAt / eb);
        p.raw(+ta, +tb, mb, nb, k, alpha, aAt, ta ? mb : k, bAt, tb ? k : nb, beta, cAt, nb, 0);
        const c0 = cAt / eb;
        for (let i = 0; i < mb; i++)
          c.set(heap.subarray(c0 + i * nb, c0 + (i + 1) * nb), (i0 + i) * ldc + j0);
      }
    }
  }
}

function align16(bytes: number): number {
  return Math.ceil(bytes / 16) * 16;
}

/** Copies rows r0..r0+rows, columns c0..c0+cols of a row-major matrix into contiguous rows at `at`. */
function copyRows<T extends Floats>(
  src: T,
  ld: number,
  r0: number,
  c0: number,
  rows: number,
  cols: number,
  heap: T,
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
    const { exports } = new wasmApi.Instance(module, { env: { memory } });
    const raw = { sgemm: exports.sgemm as RawGemm, dgemm: exports.dgemm as RawGemm };
    const gemm = new WasmGemm(memory, raw, (exports.workspace_bytes as () => number)(), stagingElements);
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
export function wasmGemm(): WasmGemm {
  loaded ??= loadWasmGemm();
  if (loaded.gemm === null) throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `gemm: ${loaded.reason}`);
  return loaded.gemm;
}

/** This thread's f32 entry point (see wasmGemm). */
export function wasmSgemm(): CpuBlas['sgemm'] {
  return wasmGemm().sgemm;
}

/** Whether the engine can load here, and why not (for backend status and test skips). */
export function wasmGemmStatus(): { readonly available: boolean; readonly reason?: string } {
  loaded ??= loadWasmGemm();
  return loaded.gemm === null ? { available: false, reason: loaded.reason } : { available: true };
}
