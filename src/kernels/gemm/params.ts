/** gemm's scalars and dimensions, parsed the same way by validation and every implementation. */
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { boolScalar, enumScalar, numberScalar } from '../common/scalars.js';

export const GEMM_SCALARS = ['alpha', 'beta', 'transA', 'transB', 'precision'] as const;
export const GEMM_PRECISIONS = ['default', 'tf32'] as const;
export type GemmPrecision = (typeof GEMM_PRECISIONS)[number];

export interface GemmParams {
  readonly alpha: number;
  readonly beta: number;
  readonly transA: boolean;
  readonly transB: boolean;
  /** 'tf32' allows tensor-core f32 on GPUs; CPU engines always compute full f32. */
  readonly precision: GemmPrecision;
}

export function gemmParams(scalars: Scalars): GemmParams {
  return {
    alpha: numberScalar('gemm', scalars, 'alpha', 1),
    beta: numberScalar('gemm', scalars, 'beta', 0),
    transA: boolScalar('gemm', scalars, 'transA', false),
    transB: boolScalar('gemm', scalars, 'transB', false),
    precision: enumScalar('gemm', scalars, 'precision', GEMM_PRECISIONS, 'default'),
  };
}

export interface GemmDims {
  readonly m: number;
  readonly n: number;
  readonly k: number;
}

/** Dimensions read from a and b (validation checks that c and the inner sizes agree). */
export function gemmDims(a: TensorDesc, b: TensorDesc, p: GemmParams): GemmDims {
  const m = p.transA ? a.shape[1]! : a.shape[0]!;
  const k = p.transA ? a.shape[0]! : a.shape[1]!;
  const n = p.transB ? b.shape[0]! : b.shape[1]!;
  return { m, n, k };
}
