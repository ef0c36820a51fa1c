/**
 * Operator definitions: what an op takes (named tensor arguments with access modes, scalars), how to
 * validate it and what it costs. Implementations are registered separately per backend kind in the
 * flat table `register.ts` (TF.js style), so adding a backend's version of an op is one file and one line.
 */
import type { DeviceKind, Scalars, TensorDesc } from '../devices/device.js';

export type AccessMode = 'r' | 'w' | 'rw';

export interface ArgSpec {
  readonly name: string;
  readonly mode: AccessMode;
}

export interface Cost {
  /** Floating-point operations. */
  readonly flops: number;
  /** Bytes read plus written in device memory. */
  readonly bytes: number;
}

export interface KernelDef {
  readonly name: string;
  readonly args: readonly ArgSpec[];
  /** Throws TandemError (TANDEM_ERR_SHAPE / _DTYPE / _INVALID_ARGUMENT) when the call is malformed. */
  validate(args: Readonly<Record<string, TensorDesc>>, scalars: Scalars): void;
  /** Access modes that depend on scalars (gemm with beta = 0 only writes C). */
  modes?(scalars: Scalars): Readonly<Record<string, AccessMode>>;
  cost(args: Readonly<Record<string, TensorDesc>>, scalars: Scalars): Cost;
}

export interface KernelImplEntry {
  readonly op: string;
  readonly backend: DeviceKind;
  /** Backend-specific: a CpuKernel, a CUDA kernel object, a WGSL program... The backend knows its type. */
  readonly impl: unknown;
}

export function argMode(def: KernelDef, index: number, scalars: Scalars): AccessMode {
  const spec = def.args[index]!;
  return def.modes?.(scalars)[spec.name] ?? spec.mode;
}
