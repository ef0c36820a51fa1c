/**
 * The CUDA C prelude prepended to Tandem's own programs: conversions for f16/bf16 stored as 16-bit
 * words (inline PTX, so no header is needed and NVRTC never looks for cuda_fp16.h), and per bound name N
 * the storage type N_t, compute type N_c and converting load/store macros ldN / stN.
 */
import type { DType } from '../../core/dtype.js';

const BASE = `typedef unsigned short tdm_u16;
static __device__ __forceinline__ float tdm_h2f(tdm_u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ tdm_u16 tdm_f2h(float f) { tdm_u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float tdm_bf2f(tdm_u16 h) { return __uint_as_float(((unsigned)h) << 16); }
static __device__ __forceinline__ tdm_u16 tdm_f2bf(float f) {
#if __CUDA_ARCH__ >= 800
  tdm_u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
#else
  unsigned u = __float_as_uint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return 0x7fc0;
  return (tdm_u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}
// Float to integer: truncate toward zero, saturate, NaN -> 0 (kernels/cast/convert.ts's rule).
static __device__ __forceinline__ int tdm_to_i32(double v) { return v != v ? 0 : v <= -2147483648.0 ? (int)0x80000000 : v >= 2147483647.0 ? 2147483647 : (int)v; }
static __device__ __forceinline__ unsigned char tdm_to_u8(double v) { return v != v ? 0 : v <= 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)(int)v; }
`;

function bind(name: string, dtype: DType): string {
  const t = `${name}_t`;
  const c = `${name}_c`;
  switch (dtype) {
    case 'f32':
      return `typedef float ${t}; typedef float ${c};
#define ld${name}(p, i) ((p)[i])
#define st${name}(p, i, v) ((p)[i] = (float)(v))`;
    case 'f64':
      return `typedef double ${t}; typedef double ${c};
#define ld${name}(p, i) ((p)[i])
#define st${name}(p, i, v) ((p)[i] = (double)(v))`;
    case 'f16':
      return `typedef tdm_u16 ${t}; typedef float ${c};
#define ld${name}(p, i) tdm_h2f((p)[i])
#define st${name}(p, i, v) ((p)[i] = tdm_f2h((float)(v)))`;
    case 'bf16':
      return `typedef tdm_u16 ${t}; typedef float ${c};
#define ld${name}(p, i) tdm_bf2f((p)[i])
#define st${name}(p, i, v) ((p)[i] = tdm_f2bf((float)(v)))`;
    case 'i32':
      return `typedef int ${t}; typedef int ${c};
#define ld${name}(p, i) ((p)[i])
#define st${name}(p, i, v) ((p)[i] = tdm_to_i32((double)(v)))`;
    case 'u8':
      return `typedef unsigned char ${t}; typedef int ${c};
#define ld${name}(p, i) ((int)(p)[i])
#define st${name}(p, i, v) ((p)[i] = tdm_to_u8((double)(v)))`;
  }
}

export function prelude(dtypes: Readonly<Record<string, DType>>): string {
  const parts = [BASE];
  for (const [name, dtype] of Object.entries(dtypes)) parts.push(bind(name, dtype));
  return parts.join('\n') + '\n';
}

export function defineLines(defines: Readonly<Record<string, string | number>>): string {
  return Object.entries(defines)
    .map(([k, v]) => `#define ${k} ${v}\n`)
    .join('');
}
