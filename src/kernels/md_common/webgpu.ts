/**
 * WGSL versions of lj_forces and md_integrate (f32, full transposed neighbour lists, one invocation per
 * atom / element). The neighbour list itself is built by the CPU kernel (runMd places md_neighbors on
 * the CPU for a WebGPU run) and the runtime moves positions and list between the two memories.
 */
import type { WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { boolScalar, intScalar, numberScalar } from '../common/scalars.js';
import { boxOf, listFlags } from './defs.js';
import { ljShift } from './lj.js';

export const LJ_FORCES_WGSL = `
struct P { n: u32, lx: f32, ly: f32, lz: f32, rc2: f32, eshift: f32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> NBR: array<i32>;
@group(0) @binding(2) var<storage, read> NC: array<i32>;
@group(0) @binding(3) var<storage, read_write> F: array<f32>;
@group(0) @binding(4) var<storage, read_write> EV: array<f32>;
@group(0) @binding(5) var<uniform> p: P;
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 128u + lid;
  if (i >= p.n) { return; }
  let L = vec3<f32>(p.lx, p.ly, p.lz);
  let xi = vec3<f32>(X[3u * i], X[3u * i + 1u], X[3u * i + 2u]);
  var fi = vec3<f32>(0.0);
  var e = 0.0;
  var w = 0.0;
  let m = u32(NC[i]);
  for (var k = 0u; k < m; k++) {
    let j = u32(NBR[k * p.n + i]);
    var d = xi - vec3<f32>(X[3u * j], X[3u * j + 1u], X[3u * j + 2u]);
    d = d - L * round(d / L);
    let r2 = dot(d, d);
    if (r2 < p.rc2) {
      let r2i = 1.0 / r2;
      let r6i = r2i * r2i * r2i;
      let fpair = r6i * (48.0 * r6i - 24.0) * r2i;
      fi = fi + d * fpair;
      e = e + 4.0 * r6i * (r6i - 1.0) - p.eshift;
      w = w + r2 * fpair;
    }
  }
  F[3u * i] = fi.x; F[3u * i + 1u] = fi.y; F[3u * i + 2u] = fi.z;
  EV[2u * i] = 0.5 * e; EV[2u * i + 1u] = 0.5 * w;
}
`;

export const MD_INTEGRATE_WGSL = `
struct P { m: u32, dt: f32, stage: u32 }
@group(0) @binding(0) var<storage, read_write> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> V: array<f32>;
@group(0) @binding(2) var<storage, read> F: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (i >= p.m) { return; }
  let v = V[i] + 0.5 * p.dt * F[i];
  V[i] = v;
  if (p.stage == 1u) { X[i] = X[i] + p.dt * v; }
}
`;

export const ljForcesWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, s) => {
    const { half, transposed } = listFlags('lj_forces', s);
    return args[0]!.dtype === 'f32' && transposed && !half;
  },
  plan(args, s) {
    const n = args[0]!.shape[0]!;
    const box = boxOf('lj_forces', s);
    const rc = numberScalar('lj_forces', s, 'cutoff');
    return [
      {
        kind: 'dispatch',
        wgsl: LJ_FORCES_WGSL,
        entry: 'main',
        bind: [0, 1, 2, 3, 4],
        uniforms: [
          { type: 'u32', value: n },
          { type: 'f32', value: box.lx },
          { type: 'f32', value: box.ly },
          { type: 'f32', value: box.lz },
          { type: 'f32', value: rc * rc },
          { type: 'f32', value: ljShift(rc, boolScalar('lj_forces', s, 'shift', false)) },
        ],
        workgroups: { linear: Math.ceil(n / 128) },
      },
    ];
  },
};

export const mdIntegrateWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args) => args[0]!.dtype === 'f32',
  plan(args, s) {
    const m = 3 * args[0]!.shape[0]!;
    return [
      {
        kind: 'dispatch',
        wgsl: MD_INTEGRATE_WGSL,
        entry: 'main',
        bind: [0, 1, 2],
        uniforms: [
          { type: 'u32', value: m },
          { type: 'f32', value: numberScalar('md_integrate', s, 'dt') },
          { type: 'u32', value: intScalar('md_integrate', s, 'stage') },
        ],
        workgroups: { linear: Math.ceil(m / 256) },
      },
    ];
  },
};
