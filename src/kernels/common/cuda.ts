/**
 * Shared pieces of Tandem's own CUDA programs: launch geometry for element-wise kernels and a few
 * overloads so one source serves float (f32/f16/bf16 compute) and double (f64).
 */
import { numel } from '../../core/shape.js';
import type { CudaArgDesc, Dim3 } from '../../devices/cuda/kernel-api.js';

export const BLOCK = 256;
/** Enough blocks to fill the GPU many times over; larger tensors use the grid-stride loop. */
const MAX_BLOCKS = 1 << 16;

export function count(a: CudaArgDesc): number {
  return numel(a.desc.shape);
}

export function elementwiseGrid(n: number): Dim3 {
  return [Math.min(Math.ceil(n / BLOCK), MAX_BLOCKS), 1, 1];
}

export const BLOCK_DIM: Dim3 = [BLOCK, 1, 1];

export const GRID_STRIDE =
  'for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)';

export const MATH_OVERLOADS = `
#define TDM_F(name, f, d) static __device__ __forceinline__ float name(float v) { return f(v); } \\
  static __device__ __forceinline__ double name(double v) { return d(v); }
TDM_F(m_exp, expf, exp) TDM_F(m_log, logf, log) TDM_F(m_sqrt, sqrtf, sqrt) TDM_F(m_tanh, tanhf, tanh)
TDM_F(m_sin, sinf, sin) TDM_F(m_cos, cosf, cos) TDM_F(m_abs, fabsf, fabs)
static __device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
static __device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }
static __device__ __forceinline__ float m_max(float a, float b) { return fmaxf(a, b); }
static __device__ __forceinline__ double m_max(double a, double b) { return fmax(a, b); }
static __device__ __forceinline__ float m_min(float a, float b) { return fminf(a, b); }
static __device__ __forceinline__ double m_min(double a, double b) { return fmin(a, b); }
`;
