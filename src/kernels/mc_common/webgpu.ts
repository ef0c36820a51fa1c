/**
 * WGSL versions of mc_european / mc_asian: one workgroup per output row, 256 invocations each, f32
 * throughout (WGSL has no f64), workgroup tree reduction. Stream indices are u32 here, so a call must
 * stay below 2^32 streams (supports() declines otherwise).
 */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { readMcScalars } from './def.js';
import { PHILOX_WGSL } from './sources.js';

const HEADER = `${PHILOX_WGSL}
struct P { first: u32, streams: u32, samples_lo: u32, steps: u32, k0: u32, k1: u32, call: u32, anti: u32,
           spot: f32, strike: f32, mu: f32, sigma: f32, rows: u32 }
@group(0) @binding(0) var<storage, read_write> OUT: array<f32>;
@group(0) @binding(1) var<uniform> p: P;
var<workgroup> sh: array<vec3<f32>, 256>;
fn payoff(s: f32) -> f32 { if (p.call != 0u) { return max(s - p.strike, 0.0); } return max(p.strike - s, 0.0); }
fn finish(lid: u32, row: u32, acc: vec3<f32>) {
  sh[lid] = acc;
  workgroupBarrier();
  for (var o = 128u; o > 0u; o = o >> 1u) {
    if (lid < o) { sh[lid] = sh[lid] + sh[lid + o]; }
    workgroupBarrier();
  }
  if (lid == 0u) { OUT[3u * row] = sh[0].x; OUT[3u * row + 1u] = sh[0].y; OUT[3u * row + 2u] = sh[0].z; }
}
fn slice(row: u32) -> vec2<u32> {
  let per = (p.streams + p.rows - 1u) / p.rows;
  return vec2<u32>(p.first + min(p.streams, row * per), p.first + min(p.streams, (row + 1u) * per));
}
`;

export const MC_EUROPEAN_WGSL = `${HEADER}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }
  let r = slice(row);
  let A = p.spot * exp(p.mu);
  var acc = vec3<f32>(0.0);
  for (var s = r.x + lid; s < r.y; s += 256u) {
    let w = tdm_philox(vec4<u32>(s, 0u, 0u, 0u), vec2<u32>(p.k0, p.k1));
    let za = tdm_boxmuller(w.x, w.y);
    let zb = tdm_boxmuller(w.z, w.w);
    var z = array<f32, 4>(za.x, za.y, zb.x, zb.y);
    let lanes = min(4u, p.samples_lo - 4u * s);
    for (var k = 0u; k < lanes; k++) {
      let e = exp(p.sigma * z[k]);
      var v = payoff(A * e);
      if (p.anti != 0u) { v = 0.5 * (v + payoff(A / e)); }
      acc = acc + vec3<f32>(v, v * v, 1.0);
    }
  }
  finish(lid, row, acc);
}
`;

export const MC_ASIAN_WGSL = `${HEADER}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }
  let r = slice(row);
  let E2 = exp(2.0 * p.mu);
  var acc = vec3<f32>(0.0);
  for (var s = r.x + lid; s < r.y; s += 256u) {
    var S = p.spot; var Sb = p.spot; var a = 0.0; var ab = 0.0;
    var z = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    for (var j = 0u; j < p.steps; j++) {
      if ((j & 3u) == 0u) {
        let w = tdm_philox(vec4<u32>(s, j >> 2u, 0u, 0u), vec2<u32>(p.k0, p.k1));
        let za = tdm_boxmuller(w.x, w.y);
        let zb = tdm_boxmuller(w.z, w.w);
        z = array<f32, 4>(za.x, za.y, zb.x, zb.y);
      }
      let g = exp(p.mu + p.sigma * z[j & 3u]);
      S = S * g; a = a + S;
      if (p.anti != 0u) { Sb = Sb * (E2 / g); ab = ab + Sb; }
    }
    var v = payoff(a / f32(p.steps));
    if (p.anti != 0u) { v = 0.5 * (v + payoff(ab / f32(p.steps))); }
    acc = acc + vec3<f32>(v, v * v, 1.0);
  }
  finish(lid, row, acc);
}
`;

function kernel(op: 'mc_european' | 'mc_asian', wgsl: string): WebGpuKernel {
  return {
    kind: 'webgpu-kernel',
    supports(args, scalars) {
      if (args.length !== 1 || args[0]!.dtype !== 'f32') return false;
      const { first, streams, spec } = readMcScalars(op, scalars);
      // u32 arithmetic in the shader: stream indices (times 4 lanes for european) must fit.
      const lanes = op === 'mc_european' ? 4 : 1;
      return (first + streams) * lanes < 2 ** 32 && spec.samples < 2 ** 32;
    },
    plan(args, scalars) {
      const { first, streams, spec } = readMcScalars(op, scalars);
      const rows = args[0]!.shape[0]!;
      return [
        {
          kind: 'dispatch',
          wgsl,
          entry: 'main',
          bind: [0],
          uniforms: [
            { type: 'u32', value: first },
            { type: 'u32', value: streams },
            { type: 'u32', value: spec.samples },
            { type: 'u32', value: spec.steps },
            { type: 'u32', value: spec.seed % 2 ** 32 },
            { type: 'u32', value: Math.floor(spec.seed / 2 ** 32) },
            { type: 'u32', value: spec.call ? 1 : 0 },
            { type: 'u32', value: spec.antithetic ? 1 : 0 },
            { type: 'f32', value: spec.spot },
            { type: 'f32', value: spec.strike },
            { type: 'f32', value: spec.mu },
            { type: 'f32', value: spec.sigma },
            { type: 'u32', value: rows },
          ],
          workgroups: { linear: rows },
        },
      ];
    },
  };
}

export const mcEuropeanWebGpu = kernel('mc_european', MC_EUROPEAN_WGSL);
export const mcAsianWebGpu = kernel('mc_asian', MC_ASIAN_WGSL);
