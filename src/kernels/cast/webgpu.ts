/**
 * WGSL cast among f32, i32, f16 and bf16, and between f32 and f64 (webgpu-f64.ts). Float to i32 truncates toward zero and saturates, NaN -> 0
 * (convert.ts): written out because WGSL's own conversion clamps to the largest f32 below 2^31 and
 * leaves NaN undefined; NaN is tested on the bits, which fast-math compilers cannot fold away. f16 is
 * native with shader-f16; packed f16 and bf16 travel two per u32 word (common/webgpu.ts), and a cast
 * touching a packed side runs one invocation per word pair. Same dtype: a buffer copy.
 */
import type { DType } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { WebGpuFeatures, WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN, isPacked, packingWgsl } from '../common/webgpu.js';
import { castF64Step } from './webgpu-f64.js';

type CastType = 'f32' | 'i32' | 'f16' | 'f16x2' | 'bf16x2';
type Packed = 'f16x2' | 'bf16x2';

function castType(d: DType, f: WebGpuFeatures): CastType | undefined {
  if (d === 'f32' || d === 'i32') return d;
  if (d === 'f16') return f.shaderF16 ? 'f16' : 'f16x2';
  if (d === 'bf16') return 'bf16x2';
  return undefined;
}

const TO_I32 = `fn to_i32(x: f32) -> i32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0; }
  if (x >= 2147483648.0) { return 2147483647; }
  if (x <= -2147483648.0) { return -2147483647 - 1; }
  return i32(x);
}
`;

/** f32 -> a stored element of an unpacked type. */
function store(to: 'f32' | 'i32' | 'f16', v: string): string {
  return to === 'i32' ? `to_i32(${v})` : `${to}(${v})`;
}

function body(from: CastType, to: CastType): string {
  const inP = isPacked(from as Packed);
  const outP = isPacked(to as Packed);
  if (inP && outP) return `if (2u * i >= P.n) { return; }\n  Y[i] = y_pack2(x_unpack2(X[i]));`;
  if (inP) {
    // One word in, two elements out.
    const t = to as 'f32' | 'i32' | 'f16';
    return `if (2u * i >= P.n) { return; }
  let v = x_unpack2(X[i]);
  Y[2u * i] = ${store(t, 'v.x')};
  if (2u * i + 1u < P.n) { Y[2u * i + 1u] = ${store(t, 'v.y')}; }`;
  }
  if (outP) {
    // Two elements in, one word out (the odd tail packs a zero into the padding half).
    return `if (2u * i >= P.n) { return; }
  let hi = select(0.0, f32(X[min(2u * i + 1u, P.n - 1u)]), 2u * i + 1u < P.n);
  Y[i] = y_pack2(vec2<f32>(f32(X[2u * i]), hi));`;
  }
  const value = from === 'i32' ? `${to}(X[i])` : store(to as 'f32' | 'i32' | 'f16', `f32(X[i])`);
  return `if (i >= P.n) { return; }\n  Y[i] = ${value};`;
}

export function castWgsl(from: CastType, to: CastType): string {
  const word = (t: CastType): string => (isPacked(t as Packed) ? 'u32' : t);
  const f16 = from === 'f16' || to === 'f16';
  const helpers = [
    to === 'i32' && from !== 'i32' ? TO_I32 : '',
    isPacked(from as Packed) ? packingWgsl(from as Packed, 'x_') : '',
    isPacked(to as Packed) ? packingWgsl(to as Packed, 'y_') : '',
  ].join('');
  return `${f16 ? 'enable f16;\n' : ''}struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<${word(from)}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${word(to)}>;
@group(0) @binding(2) var<uniform> P: Params;
${helpers}${LINEAR_MAIN}
  ${body(from, to)}
}
`;
}

/** f32 <-> f64, by bits (webgpu-f64.ts). */
function isF64Pair(a: DType, b: DType): boolean {
  return (a === 'f64' && b === 'f32') || (a === 'f32' && b === 'f64');
}

export const castWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 &&
    (args[0]!.dtype === args[1]!.dtype ||
      isF64Pair(args[0]!.dtype, args[1]!.dtype) ||
      (castType(args[0]!.dtype, f) !== undefined && castType(args[1]!.dtype, f) !== undefined)),
  plan(args, _scalars, f) {
    const [x, y] = [args[0]!, args[1]!];
    if (x.dtype === y.dtype) return [{ kind: 'copy', src: 0, dst: 1, bytes: x.bytes }];
    if (isF64Pair(x.dtype, y.dtype)) {
      const n = numel(x.shape);
      return n === 0 ? [] : [castF64Step(y.dtype === 'f64', n)];
    }
    const from = castType(x.dtype, f)!;
    const to = castType(y.dtype, f)!;
    const n = numel(x.shape);
    const pairs = isPacked(from as Packed) || isPacked(to as Packed);
    return [
      {
        kind: 'dispatch',
        wgsl: castWgsl(from, to),
        entry: 'main',
        bind: [0, 1],
        uniforms: [{ type: 'u32', value: n }],
        workgroups: { linear: Math.ceil((pairs ? Math.ceil(n / 2) : n) / 256) },
      },
    ];
  },
};
