/**
 * WGSL cast among f32, i32 and f16. Float to i32 truncates toward zero and saturates, NaN -> 0
 * (convert.ts): written out because WGSL's own conversion clamps to the largest f32 below 2^31 and
 * leaves NaN undefined; NaN is tested on the bits, which fast-math compilers cannot fold away. f16 is
 * native with shader-f16, otherwise packed two per word (common/webgpu.ts): one invocation then
 * converts a word's two elements. Same dtype: a buffer copy.
 */
import type { DType } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { WebGpuFeatures, WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { LINEAR_MAIN, PACK_F16_WGSL } from '../common/webgpu.js';

type CastType = 'f32' | 'i32' | 'f16' | 'f16x2';

function castType(d: DType, f: WebGpuFeatures): CastType | undefined {
  if (d === 'f32' || d === 'i32') return d;
  if (d === 'f16') return f.shaderF16 ? 'f16' : 'f16x2';
  return undefined;
}

const TO_I32 = `fn to_i32(x: f32) -> i32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return 0; }
  if (x >= 2147483648.0) { return 2147483647; }
  if (x <= -2147483648.0) { return -2147483647 - 1; }
  return i32(x);
}
`;

/** f32 -> stored element of type `to` (not packed). */
function store(to: 'f32' | 'i32' | 'f16', v: string): string {
  return to === 'i32' ? `to_i32(${v})` : `${to}(${v})`;
}

export function castWgsl(from: CastType, to: CastType): string {
  const word = (t: CastType): string => (t === 'f16x2' ? 'u32' : t);
  let body: string;
  if (from === 'f16x2') {
    // One word in, two elements out.
    const t = to as 'f32' | 'i32';
    body = `if (2u * i >= P.n) { return; }
  let v = unpack2x16float(X[i]);
  Y[2u * i] = ${store(t, 'v.x')};
  if (2u * i + 1u < P.n) { Y[2u * i + 1u] = ${store(t, 'v.y')}; }`;
  } else if (to === 'f16x2') {
    // Two elements in, one word out (the odd tail packs a zero into the padding half).
    body = `if (2u * i >= P.n) { return; }
  let hi = select(0.0, f32(X[min(2u * i + 1u, P.n - 1u)]), 2u * i + 1u < P.n);
  Y[i] = pack_f16x2(vec2<f32>(f32(X[2u * i]), hi));`;
  } else {
    const value = from === 'i32' ? `${to}(X[i])` : store(to, `f32(X[i])`);
    body = `if (i >= P.n) { return; }
  Y[i] = ${value};`;
  }
  const f16 = from === 'f16' || to === 'f16';
  return `${f16 ? 'enable f16;\n' : ''}struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> X: array<${word(from)}>;
@group(0) @binding(1) var<storage, read_write> Y: array<${word(to)}>;
@group(0) @binding(2) var<uniform> P: Params;
${to === 'i32' && from !== 'i32' ? TO_I32 : ''}${to === 'f16x2' ? PACK_F16_WGSL : ''}${LINEAR_MAIN}
  ${body}
}
`;
}

export const castWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, _s, f) =>
    args.length === 2 &&
    (args[0]!.dtype === args[1]!.dtype ||
      (castType(args[0]!.dtype, f) !== undefined && castType(args[1]!.dtype, f) !== undefined)),
  plan(args, _scalars, f) {
    const [x, y] = [args[0]!, args[1]!];
    if (x.dtype === y.dtype) return [{ kind: 'copy', src: 0, dst: 1, bytes: x.bytes }];
    const from = castType(x.dtype, f)!;
    const to = castType(y.dtype, f)!;
    const n = numel(x.shape);
    const invocations = from === 'f16x2' || to === 'f16x2' ? Math.ceil(n / 2) : n;
    return [
      {
        kind: 'dispatch',
        wgsl: castWgsl(from, to),
        entry: 'main',
        bind: [0, 1],
        uniforms: [{ type: 'u32', value: n }],
        workgroups: { linear: Math.ceil(invocations / 256) },
      },
    ];
  },
};
