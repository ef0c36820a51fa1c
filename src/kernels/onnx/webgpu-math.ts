/**
 * WGSL functions for onnx_unary's hyperbolic ops (webgpu.ts; onnx_map through webgpu-map.ts). WGSL's
 * own sinh/asinh/... are specified as their exp/log formulas, which cancel near 0 (sinh(x) from
 * exp(x) − exp(−x), asinh through log(1 + small)) and lose most digits there. Here sinh/cosh take a
 * Taylor polynomial below |x| = 1 (terms past x^13 are below 2^-32), and the inverses go through a
 * log1p that sums 2·atanh(u / (2 + u))'s series where its argument is small. Elsewhere WGSL's exp and
 * log are used as the other onnx_ ops use them (a few ULP on real drivers) — except exp for sinh/cosh
 * past 1, reduced by hand (llvmpipe's exp is ~16 ULP off at 19). Big arguments avoid the overflow of
 * the textbook formulas (e^|x|/2 by ldexp for cosh/sinh, log(x) + ln 2 for acosh/asinh).
 * Measured on llvmpipe over wide ranges: within 4.5 ULP of the float64 function.
 */

const HYPERBOLIC_WGSL = `const LN2 = 0.6931471805599453;
fn t_nan(x: f32) -> f32 { return bitcast<f32>(0x7fc00000u | (bitcast<u32>(x) & 0u)); }
fn t_log1p(u: f32) -> f32 {
  if (u < -0.3333333 || u > 0.5) { return log(1.0 + u); }
  let s = u / (2.0 + u);
  let q = s * s;
  let p = 1.0 / 13.0 + q * (1.0 / 15.0 + q * (1.0 / 17.0));
  return 2.0 * s * (1.0 + q * (1.0 / 3.0 + q * (0.2 + q * (1.0 / 7.0 + q * (1.0 / 9.0 + q * (1.0 / 11.0 + q * p))))));
}
/** e^a·2^s (a in [−103, 88.7]): Cody–Waite reduction a = k·ln2 + r, a degree-7 polynomial in r. */
fn t_exp2k(a: f32, s: i32) -> f32 {
  let k = round(a * 1.4426950408889634);
  let r = (a - k * 0.693145751953125) - k * 1.4286068202862268e-6;
  let p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r / 5040.0))))));
  return ldexp(p, i32(k) + s);
}
fn t_inf(x: f32) -> f32 { return bitcast<f32>(0x7f800000u | (bitcast<u32>(x) & 0u)); }
/** e^a / 2 for a ≥ 0, inf past f32. */
fn t_exp_half(a: f32) -> f32 {
  if (a > 89.4) { return t_inf(a); }
  return t_exp2k(a, -1);
}
fn t_exp(a: f32) -> f32 {
  if (a > 88.72) { return t_inf(a); }
  if (a < -103.0) { return 0.0; }
  return t_exp2k(a, 0);
}
fn t_sinh(x: f32) -> f32 {
  let a = abs(x);
  if (a < 1.0) {
    let q = x * x;
    return x * (1.0 + q / 6.0 * (1.0 + q / 20.0 * (1.0 + q / 42.0 * (1.0 + q / 72.0 * (1.0 + q / 110.0 * (1.0 + q / 156.0))))));
  }
  let h = t_exp_half(a);
  let r = h - 0.25 / h;
  return select(r, -r, x < 0.0);
}
fn t_cosh(x: f32) -> f32 {
  let a = abs(x);
  if (a < 1.0) {
    let q = x * x;
    return 1.0 + q / 2.0 * (1.0 + q / 12.0 * (1.0 + q / 30.0 * (1.0 + q / 56.0 * (1.0 + q / 90.0 * (1.0 + q / 132.0)))));
  }
  let h = t_exp_half(a);
  return h + 0.25 / h;
}
fn t_asinh(x: f32) -> f32 {
  let a = abs(x);
  var r: f32;
  if (a > 4096.0) { r = log(a) + LN2; } else { r = t_log1p(a + a * a / (1.0 + sqrt(1.0 + a * a))); }
  return select(r, -r, x < 0.0);
}
fn t_acosh(x: f32) -> f32 {
  if (x < 1.0) { return t_nan(x); }
  if (x > 4096.0) { return log(x) + LN2; }
  let t = x - 1.0;
  return t_log1p(t + sqrt(t * (2.0 + t)));
}
fn t_atanh(x: f32) -> f32 {
  let a = abs(x);
  if (a > 1.0) { return t_nan(x); }
  let r = 0.5 * t_log1p(2.0 * a / (1.0 - a));
  return select(r, -r, x < 0.0);
}
`;

/** Horner's scheme over t for coefficients c0, c1, … (WGSL expression). */
function horner(t: string, c: readonly number[]): string {
  return c.reduceRight((acc, v, i) => (i === c.length - 1 ? String(v) : `${v} + ${t} * (${acc})`), '');
}

/** erf(x)/x = Σ (−1)^n 2/√π · z^n / (n!(2n+1)), z = x², rounded to f32 (below |x| = 0.84375 the 12 terms reach 2^-36). */
const ERF_TAYLOR = Array.from({ length: 12 }, (_, n) => {
  let f = 1;
  for (let k = 2; k <= n; k++) f *= k;
  return Math.fround((n % 2 === 0 ? 2 : -2) / Math.sqrt(Math.PI) / (f * (2 * n + 1)));
});

/**
 * erfc(x)·e^(x²) on three segments, t = (x − c)/h: Chebyshev fits (float64 values from mpmath, 400
 * nodes) converted to powers of t and rounded to f32; their f32 Horner evaluation is within 1.5e-7
 * relative of the function on each segment.
 */
const ERFC_SEGMENTS: readonly (readonly [number, number, number, readonly number[]])[] = [
  [
    2.0,
    1.421875,
    0.578125,
    [
      0.33484947681427, -0.10183729976415634, 0.02820378914475441, -0.007235201541334391,
      0.0017395059112459421, -0.00039534884854219854, 8.548454206902534e-5, -1.7609527276363224e-5,
      3.4958648029714823e-6, -7.361410325756879e-7, 1.364507085099831e-7,
    ],
  ],
  [
    4.0,
    3.0,
    1.0,
    [
      0.17900115251541138, -0.054372262209653854, 0.015884337946772575, -0.004479414317756891,
      0.0012232965091243386, -0.00032421702053397894, 8.284357318188995e-5, -2.0783401851076633e-5,
      5.935722128924681e-6, -1.4334606248667114e-6,
    ],
  ],
  [
    10.0,
    7.0,
    3.0,
    [
      0.07980005443096161, -0.03353521600365639, 0.013960957527160645, -0.005759069696068764,
      0.002353645395487547, -0.0009536994039081037, 0.0003871943918056786, -0.00015484688628930598,
      5.363852687878534e-5, -2.0529712855932303e-5, 1.4734735486854333e-5, -5.870022050658008e-6,
    ],
  ],
];

/**
 * erf, erfc (x ≥ 0.84375), Gelu, softplus and elu. erfc is e^(−x²)·(fit): x² is split exactly (x's
 * top 12 significant bits h, h² exact; the rest 2hl + l² small) so e^(−x²) keeps its accuracy where
 * x² itself would round; erf = 1 − erfc there. Gelu takes erfc for x/√2 < −0.84375, where 1 + erf
 * would cancel. expm1 is Taylor below |x| = 0.35 (terms past x^8 under 2^-30 relative).
 */
const ERF_WGSL = `fn t_erfc_big(a: f32) -> f32 {
  if (a >= 10.0) { return 0.0; }
  var p: f32;
  ${ERFC_SEGMENTS.map(([end, c, h, co], i) => `${i === 0 ? '' : 'else '}if (a < ${end.toFixed(1)}) { let t = (a - ${c}) / ${h}; p = ${horner('t', co)}; }`).join('\n  ')}
  let hi = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
  let lo = a - hi;
  return t_exp(-hi * hi) * t_exp(-(2.0 * hi * lo + lo * lo)) * p;
}
fn t_erf(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.84375) { let z = x * x; return x * (${horner('z', ERF_TAYLOR)}); }
  let r = 1.0 - t_erfc_big(a);
  return select(r, -r, x < 0.0);
}
fn t_gelu(x: f32) -> f32 {
  let u = x * 0.7071067811865476;
  if (u < -0.84375) { return 0.5 * x * t_erfc_big(-u); }
  return 0.5 * x * (1.0 + t_erf(u));
}
fn t_expm1(x: f32) -> f32 {
  if (abs(x) < 0.35) {
    return x * (1.0 + x / 2.0 * (1.0 + x / 3.0 * (1.0 + x / 4.0 * (1.0 + x / 5.0 * (1.0 + x / 6.0 * (1.0 + x / 7.0 * (1.0 + x / 8.0)))))));
  }
  return t_exp(x) - 1.0;
}
`;

/** Every helper the onnx_unary expressions (webgpu.ts UNARY_WGSL) call. */
export const UNARY_MATH_WGSL = HYPERBOLIC_WGSL + ERF_WGSL;
