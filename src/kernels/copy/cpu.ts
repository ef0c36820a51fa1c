import type { HostArray } from '../../core/dtype.js';
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';

function bytesOf(a: HostArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Same dtype on both sides, so copying the bytes is exact (f16/bf16 words included). */
export const copyCpu: CpuKernel = (args) => {
  bytesOf(args[1]!.data).set(bytesOf(args[0]!.data));
};
