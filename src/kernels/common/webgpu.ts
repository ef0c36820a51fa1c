/**
 * Shared by the WGSL kernels: how a float tensor is stored in WGSL, and one generator for
 * "out = op(inputs...)" per element. f16 tensors use native `f16` where the adapter has shader-f16 and
 * otherwise travel packed two per u32 word ('f16x2'); bf16, which WGSL lacks, always travels packed
 * ('bf16x2', the high halves of f32 bit patterns, rounded to nearest even like core/dtype.ts). Packed
 * kernels run one invocation per word and call unpack2 / pack2 / bits16, defined per packing.
 * Arithmetic is f32 in all cases.
 */
import type { DType } from '../../core/dtype.js';
import type { UniformWord, WebGpuFeatures, WgslDispatch } from '../../devices/webgpu/kernel-api.js';

export type FloatStorage = 'f32' | 'f16' | 'f16x2' | 'bf16x2';

export function isPacked(s: FloatStorage): s is 'f16x2' | 'bf16x2' {
  return s === 'f16x2' || s === 'bf16x2';
}

export function floatStorage(dtype: DType, f: WebGpuFeatures): FloatStorage | undefined {
  if (dtype === 'f32') return 'f32';
  if (dtype === 'f16') return f.shaderF16 ? 'f16' : 'f16x2';
  if (dtype === 'bf16') return 'bf16x2';
  return undefined;
}

/**
 * unpack2 (word -> two f32), bits16 (f32 -> 16-bit pattern) and pack2 for a packing, names prefixed so
 * that a cast can hold two packings. pack2x16float leaves out-of-range values undefined, so f16
 * overflow (to +-inf) and NaN are encoded by hand.
 */
export function packingWgsl(storage: 'f16x2' | 'bf16x2', prefix = ''): string {
  const bits16 =
    storage === 'f16x2'
      ? `fn ${prefix}bits16(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return 0x7e00u; }
  if (abs(x) >= 65520.0) { return ((b >> 16u) & 0x8000u) | 0x7c00u; }
  return pack2x16float(vec2<f32>(x, 0.0)) & 0xffffu;
}
fn ${prefix}unpack2(w: u32) -> vec2<f32> { return unpack2x16float(w); }
`
      : `fn ${prefix}bits16(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return ((b >> 16u) | 0x40u) & 0xffffu; }
  return ((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u) & 0xffffu;
}
fn ${prefix}unpack2(w: u32) -> vec2<f32> { return vec2<f32>(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u)); }
`;
  return `${bits16}fn ${prefix}pack2(v: vec2<f32>) -> u32 { return ${prefix}bits16(v.x) | (${prefix}bits16(v.y) << 16u); }
`;
}

/** The invocation's element (or word) index in a linear dispatch of 256-wide workgroups. */
export const LINEAR_MAIN = `@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;`;

export interface ElementwiseSpec {
  /** Tensors in binding order; `write` ones are bound read_write. */
  readonly tensors: readonly { readonly name: string; readonly write?: boolean }[];
  /** Tensors whose values are op()'s parameters, in order (seen in `expr` by their lowercase names). */
  readonly inputs: readonly string[];
  readonly output: string;
  /** f32 expression over the lowercase input names and uniform fields P.<name>. */
  readonly expr: string;
  /** Extra uniform fields after the element count, e.g. 'alpha: f32'. */
  readonly params?: readonly string[];
  /** Extra WGSL functions `expr` calls. */
  readonly helpers?: string;
}

export function elementwiseWgsl(storage: FloatStorage, s: ElementwiseSpec): string {
  const packed = isPacked(storage);
  const elem = packed ? 'u32' : storage;
  const bindings = s.tensors.map(
    (t, i) =>
      `@group(0) @binding(${i}) var<storage, ${t.write ? 'read_write' : 'read'}> ${t.name}: array<${elem}>;`,
  );
  const names = s.inputs.map((n) => n.toLowerCase());
  const call = (part: string): string =>
    `op(${s.inputs.map((n) => (packed ? `v_${n.toLowerCase()}.${part}` : `f32(${n}[i])`)).join(', ')})`;
  const body = packed
    ? `${s.inputs.map((n) => `let v_${n.toLowerCase()} = unpack2(${n}[i]);`).join('\n  ')}
  ${s.output}[i] = pack2(vec2<f32>(${call('x')}, ${call('y')}));`
    : `${s.output}[i] = ${storage as 'f32' | 'f16'}(${call('')});`;
  return `${storage === 'f16' ? 'enable f16;\n' : ''}struct Params { n: u32${(s.params ?? []).map((p) => `, ${p}`).join('')} }
${bindings.join('\n')}
@group(0) @binding(${s.tensors.length}) var<uniform> P: Params;
${s.helpers ?? ''}${isPacked(storage) ? packingWgsl(storage) : ''}fn op(${names.map((n) => `${n}: f32`).join(', ')}) -> f32 { return ${s.expr}; }
${LINEAR_MAIN}
  if (i >= P.n) { return; }
  ${body}
}
`;
}

/** The dispatch for `elements` elements: one invocation per element, or per word when packed. */
export function elementwiseStep(
  storage: FloatStorage,
  wgsl: string,
  elements: number,
  bind: readonly number[],
  params: readonly UniformWord[] = [],
): WgslDispatch {
  const n = isPacked(storage) ? Math.ceil(elements / 2) : elements;
  return {
    kind: 'dispatch',
    wgsl,
    entry: 'main',
    bind,
    uniforms: [{ type: 'u32', value: n }, ...params],
    workgroups: { linear: Math.ceil(n / 256) },
  };
}
