/**
 * Element access for the WGSL kernels of the index, bool and scatter ops (webgpu-logic.ts,
 * webgpu-index.ts, webgpu-scatter.ts). Every tensor is bound as array<u32> and read element by element
 * from its bytes, so one kernel serves every stored width: an 8-byte element is two words, a 16-bit one
 * half a word, a u8 a quarter. Copies move the bits (f64 too: nothing is computed on it); numeric reads
 * decode into f32 (f16 and bf16 exactly, by hand, since unpack2x16float need not keep NaN) or i32
 * (i32, u8). Outputs narrower than a word are written one invocation per word, so no two invocations
 * store into the same word (WGSL has no byte stores); the last word's spare bytes are the allocation's
 * padding (buffers are rounded up to 16 bytes).
 */
import { type DType, bytesPerElement } from '../../core/dtype.js';
import type { UniformWord } from '../../devices/webgpu/kernel-api.js';
import { fillPattern } from '../fill/webgpu.js';
import { storedValue } from './gather-pad.js';
import { MAX_RANK } from './shapes.js';
import { u32 } from './webgpu-steps.js';

/** Dtypes read as numbers: floats as f32, integers as i32. f64 is not (WGSL has no f64). */
export const NUMERIC_DTYPES: readonly DType[] = ['f32', 'f16', 'bf16', 'i32', 'u8'];
/** Dtypes compared exactly (orderWgsl): the numeric ones and f64, ranked on its two words. */
export const ORDERED_DTYPES: readonly DType[] = [...NUMERIC_DTYPES, 'f64'];
/** Dtypes copied as bits: all of Tandem's. */
export const BITS_DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16', 'i32', 'u8'];

export function isIntDType(d: DType): boolean {
  return d === 'i32' || d === 'u8';
}

/** f16 bits -> f32, exactly (subnormals as m·2^-24, which is a normal f32; inf and NaN kept). */
export const H2F_WGSL = `fn h2f(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  if (e == 0u) { let v = f32(m) * 5.9604644775390625e-8; return select(v, -v, s != 0u); }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}
`;

/** NaN tested on the bits: compilers may fold x != x away under fast-math assumptions. */
export const IS_NAN_WGSL = `fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
`;

/**
 * An order-preserving u32 key of a non-NaN f32 (−0 and +0 one key): comparisons on keys are exact
 * whatever the driver does with subnormals or NaN-free assumptions in float compares.
 */
export const KEY_WGSL = `fn key(x: f32) -> u32 {
  var b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) == 0u) { b = 0u; }
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}
`;

/**
 * `fn bits_<name>(o: u32, part: u32) -> u32`: the stored bits of element o of tensor <name> (for an
 * 8-byte element, its word `part`), in the low bits of the result.
 */
export function bitsWgsl(name: string, dtype: DType): string {
  const b = bytesPerElement(dtype);
  const body =
    b === 8
      ? `${name}[2u * o + part]`
      : b === 4
        ? `${name}[o]`
        : b === 2
          ? `(${name}[o >> 1u] >> ((o & 1u) * 16u)) & 0xffffu`
          : `(${name}[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu`;
  return `fn bits_${name}(o: u32, part: u32) -> u32 { return ${body}; }
`;
}

/** The WGSL type a read of `dtype` gives: f32, i32, or an f64's two words (lo, hi). */
export function valueType(dtype: DType): 'f32' | 'i32' | 'vec2<u32>' {
  return dtype === 'f64' ? 'vec2<u32>' : isIntDType(dtype) ? 'i32' : 'f32';
}

/** f64 as vec2<u32>(lo, hi): NaN on the bits, and an order key (−0 as +0) compared hi then lo. */
export const F64_ORDER_WGSL = `fn d_nan(v: vec2<u32>) -> bool {
  let m = v.y & 0x7fffffffu;
  return m > 0x7ff00000u || (m == 0x7ff00000u && v.x != 0u);
}
fn d_key(v: vec2<u32>) -> vec2<u32> {
  if (((v.y & 0x7fffffffu) | v.x) == 0u) { return vec2<u32>(0u, 0x80000000u); }
  if ((v.y & 0x80000000u) != 0u) { return ~v; }
  return vec2<u32>(v.x, v.y | 0x80000000u);
}
fn d_less(a: vec2<u32>, b: vec2<u32>) -> bool {
  let p = d_key(a);
  let q = d_key(b);
  return p.y < q.y || (p.y == q.y && p.x < q.x);
}
`;

/**
 * Exact order on values read by val_ (the same for every dtype, so a kernel is written once):
 * v_nan(v), v_lt(a, b) and v_eq(a, b) for non-NaN a, b (−0 equals +0), v_nz(v) (nonzero; NaN is).
 * Floats compare on keys of their bits, not with float compares that a driver may take as NaN-free.
 */
export function orderWgsl(dtype: DType): string {
  const t = valueType(dtype);
  if (dtype === 'f64')
    return `${F64_ORDER_WGSL}fn v_nan(v: ${t}) -> bool { return d_nan(v); }
fn v_lt(a: ${t}, b: ${t}) -> bool { return d_less(a, b); }
fn v_eq(a: ${t}, b: ${t}) -> bool { return all(d_key(a) == d_key(b)); }
fn v_nz(v: ${t}) -> bool { return ((v.y & 0x7fffffffu) | v.x) != 0u; }
`;
  if (isIntDType(dtype))
    return `fn v_nan(v: i32) -> bool { return false; }
fn v_lt(a: i32, b: i32) -> bool { return a < b; }
fn v_eq(a: i32, b: i32) -> bool { return a == b; }
fn v_nz(v: i32) -> bool { return v != 0; }
`;
  return `${dtype === 'f16' ? H2F_WGSL : ''}${IS_NAN_WGSL}${KEY_WGSL}fn v_nan(v: f32) -> bool { return is_nan(v); }
fn v_lt(a: f32, b: f32) -> bool { return key(a) < key(b); }
fn v_eq(a: f32, b: f32) -> bool { return key(a) == key(b); }
fn v_nz(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) != 0u; }
`;
}

/**
 * `fn val_<name>(o: u32)`: element o of tensor <name> as valueType(dtype) (needs h2f for f16, which
 * orderWgsl brings); bits_<name> comes with it.
 */
export function valueWgsl(name: string, dtype: DType): string {
  if (dtype === 'f64')
    return `${bitsWgsl(name, dtype)}fn val_${name}(o: u32) -> vec2<u32> { return vec2<u32>(${name}[2u * o], ${name}[2u * o + 1u]); }
`;
  const raw = `bits_${name}(o, 0u)`;
  const expr =
    dtype === 'f32'
      ? `bitcast<f32>(${raw})`
      : dtype === 'f16'
        ? `h2f(${raw})`
        : dtype === 'bf16'
          ? `bitcast<f32>(${raw} << 16u)`
          : dtype === 'i32'
            ? `bitcast<i32>(${raw})`
            : `i32(${raw})`;
  return `${bitsWgsl(name, dtype)}fn val_${name}(o: u32) -> ${valueType(dtype)} { return ${expr}; }
`;
}

/**
 * The WGSL that stores output words: `elem(e: u32, part: u32) -> u32` (the kernel's; the bits of
 * output element e, word `part` when 8 bytes wide) is called for each element of word `i` of OUT, whose
 * element count is P.n. Returns statements for a LINEAR_MAIN body.
 */
export function storeWordsWgsl(out: string, dtype: DType): string {
  const b = bytesPerElement(dtype);
  if (b === 8) return `if (i >= 2u * P.n) { return; }\n  ${out}[i] = elem(i >> 1u, i & 1u);`;
  if (b === 4) return `if (i >= P.n) { return; }\n  ${out}[i] = elem(i, 0u);`;
  const per = 4 / b;
  const mask = b === 2 ? '0xffffu' : '0xffu';
  return `if (${per}u * i >= P.n) { return; }
  var w = 0u;
  for (var j = 0u; j < ${per}u; j++) {
    let e = ${per}u * i + j;
    if (e >= P.n) { break; }
    w |= (elem(e, 0u) & ${mask}) << (j * ${8 * b}u);
  }
  ${out}[i] = w;`;
}

/** Invocations storeWordsWgsl needs for n elements of `dtype`. */
export function wordCount(dtype: DType, n: number): number {
  return Math.ceil((n * bytesPerElement(dtype)) / 4);
}

/**
 * Words (lo, hi) holding the bits of `value` stored as `dtype` (fill's encoding; integers truncated
 * and saturated as the CPU stores them): an element narrower than 4 bytes sits in the low bits of lo,
 * as bits_ returns it.
 */
export function valueWords(dtype: DType, value: number): [UniformWord, UniformWord] {
  const [lo, hi] = fillPattern(dtype, isIntDType(dtype) ? storedValue(dtype, value) : value);
  return [u32(lo), u32(hi)];
}

/** `names` × 6 u32 uniform fields (`d0..d5` for 'd'), for Params structs. */
export function fields6(...names: string[]): string[] {
  return names.flatMap((p) => Array.from({ length: MAX_RANK }, (_, k) => `${p}${k}: u32`));
}

/** `var <p> = array<u32, 6>(P.<p>0, ...);` */
export function array6(p: string): string {
  return `var ${p} = array<u32, 6>(${Array.from({ length: MAX_RANK }, (_, k) => `P.${p}${k}`).join(', ')});`;
}

/** WGSL statements: `o_<s>` = the offset of row-major index `idx` over dims `d` with strides `<s>`. */
export function offsetWgsl(idx: string, strides: readonly string[]): string {
  const decl = strides.map((s) => `var o_${s} = 0u;`).join(' ');
  const acc = strides.map((s) => `o_${s} += c * ${s}[k];`).join(' ');
  return `var rix = ${idx};
  ${decl}
  for (var k = 5; k >= 0; k--) { let c = rix % d[k]; rix = rix / d[k]; ${acc} }`;
}

export function words(values: readonly number[]): UniformWord[] {
  return values.map(u32);
}
