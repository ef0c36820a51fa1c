/**
 * mc_var in WGSL: one invocation per scenario, f32. The asset count is baked into the source (function
 * arrays need constant sizes in WGSL), so each distinct count is its own cached pipeline. The normal
 * CDF uses Abramowitz–Stegun 26.2.17 (|error| < 7.5e-8, below f32 resolution of a price).
 */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { PHILOX_WGSL } from '../mc_common/sources.js';
import { readVarScalars } from './def.js';

export function mcVarWgsl(d: number): string {
  const nb = Math.ceil(d / 4);
  return `${PHILOX_WGSL}
const D: u32 = ${d}u;
const NB: u32 = ${nb}u;
struct P { n: u32, first: u32, np: u32, horizon: f32, rate: f32, v0: f32, k0: u32, k1: u32 }
@group(0) @binding(0) var<storage, read> PF: array<f32>;
@group(0) @binding(1) var<storage, read_write> LOSS: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
fn ncdf(x: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.2316419 * abs(x));
  let poly = t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  let c = 0.3989422804014327 * exp(-0.5 * x * x) * poly;
  return select(c, 1.0 - c, x > 0.0);
}
fn bs(S: f32, K: f32, v: f32, T: f32, q: f32, kind: u32) -> f32 {
  if (T <= 0.0) { if (kind == 1u) { return max(S - K, 0.0); } return max(K - S, 0.0); }
  let sq = v * sqrt(T);
  let d1 = (log(S / K) + (p.rate - q + 0.5 * v * v) * T) / sq;
  let d2 = d1 - sq;
  let a = S * exp(-q * T);
  let b = K * exp(-p.rate * T);
  if (kind == 1u) { return a * ncdf(d1) - b * ncdf(d2); }
  return b * ncdf(-d2) - a * ncdf(-d1);
}
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 128u + lid;
  if (i >= p.n) { return; }
  let s = p.first + i;
  var z: array<f32, NB * 4u>;
  for (var b = 0u; b < NB; b++) {
    let w = tdm_philox(vec4<u32>(s, b, 0u, 0u), vec2<u32>(p.k0, p.k1));
    let za = tdm_boxmuller(w.x, w.y);
    let zb = tdm_boxmuller(w.z, w.w);
    z[4u * b] = za.x; z[4u * b + 1u] = za.y; z[4u * b + 2u] = zb.x; z[4u * b + 3u] = zb.y;
  }
  var S: array<f32, D>;
  let sh = sqrt(p.horizon);
  for (var a = 0u; a < D; a++) {
    var w = 0.0;
    for (var k = 0u; k <= a; k++) { w = w + PF[4u * D + a * D + k] * z[k]; }
    let v = PF[D + a];
    S[a] = PF[a] * exp((PF[2u * D + a] - PF[3u * D + a] - 0.5 * v * v) * p.horizon + v * sh * w);
  }
  let base = 4u * D + D * D;
  var value = 0.0;
  for (var j = 0u; j < p.np; j++) {
    let a = u32(PF[base + j]);
    let kind = u32(PF[base + p.np + j]);
    let q = PF[base + 4u * p.np + j];
    if (kind == 0u) { value = value + q * S[a]; }
    else { value = value + q * bs(S[a], PF[base + 2u * p.np + j], PF[D + a], PF[base + 3u * p.np + j] - p.horizon, PF[3u * D + a], kind); }
  }
  LOSS[i] = p.v0 - value;
}
`;
}

export const mcVarWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports(args, scalars) {
    const s = readVarScalars(scalars);
    const n = args[1]!.shape[0]!;
    // f32 storage only; u32 scenario indices; function-scope arrays kept modest.
    return args[0]!.dtype === 'f32' && args[1]!.dtype === 'f32' && s.first + n < 2 ** 32 && s.assets <= 256;
  },
  plan(args, scalars) {
    const s = readVarScalars(scalars);
    const n = args[1]!.shape[0]!;
    return [
      {
        kind: 'dispatch',
        wgsl: mcVarWgsl(s.assets),
        entry: 'main',
        bind: [0, 1],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'u32', value: s.first },
          { type: 'u32', value: s.positions },
          { type: 'f32', value: s.horizon },
          { type: 'f32', value: s.rate },
          { type: 'f32', value: s.v0 },
          { type: 'u32', value: s.seed % 2 ** 32 },
          { type: 'u32', value: Math.floor(s.seed / 2 ** 32) },
        ],
        workgroups: { linear: Math.ceil(n / 128) },
      },
    ];
  },
};
