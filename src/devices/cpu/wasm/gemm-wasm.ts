/** Placeholder until the WebAssembly SIMD kernel lands: the engine reports itself unavailable. */
import { TandemError } from '../../../core/errors.js';
import type { CpuBlas } from '../kernel-api.js';

export function wasmSgemm(): CpuBlas['sgemm'] {
  throw new TandemError(
    'TANDEM_ERR_DEVICE_UNAVAILABLE',
    'gemm: the WebAssembly GEMM engine is not built yet',
  );
}
