/**
 * WGSL GEMM: C = alpha * op(A) op(B) + beta * C, row-major, f32, f16 (native with shader-f16, else packed
 * two per u32 word) or bf16 (packed), with atomic half-word stores where neighbours share a word);
 * accumulation is always f32. Register-tiled: a 16x16 workgroup computes a (16*TM) x (16*TN) tile of
 * C, each thread TM x TN outputs held in unrolled vec4 accumulators; A and B tiles of depth BK pass
 * through workgroup memory, A transposed so both operands are read as vec4. Global loads are vec4
 * when the matrix's contiguous dimension is a multiple of 4, scalar with bounds checks otherwise.
 * The source is generated per (config, dtype, transposes, vector widths, beta == 0): the pipeline
 * cache keys on it, while m, n, k, alpha and beta travel as uniforms.
 */
import type { Scalars, TensorDesc } from '../../devices/device.js';
import type { WebGpuFeatures, WebGpuKernel, WebGpuStep } from '../../devices/webgpu/kernel-api.js';
import { type FloatStorage, floatStorage, isPacked, packingWgsl } from '../common/webgpu.js';
import { gemmDims, gemmParams } from './params.js';

export interface GemmTiling {
  /** Rows per thread: 4 or 8. */
  readonly tm: 4 | 8;
  /** Columns per thread: 4 or 8. */
  readonly tn: 4 | 8;
  /** Depth of a k-step through workgroup memory (multiple of 4). */
  readonly bk: number;
}

export interface GemmVariant extends GemmTiling {
  readonly dtype: FloatStorage;
  readonly transA: boolean;
  readonly transB: boolean;
  readonly vecA: boolean;
  readonly vecB: boolean;
  readonly vecC: boolean;
  readonly betaZero: boolean;
}

export const GEMM_LARGE: GemmTiling = { tm: 8, tn: 8, bk: 8 };
export const GEMM_SMALL: GemmTiling = { tm: 4, tn: 4, bk: 8 };

/** Loader of 4 consecutive elements along a matrix's storage row (zero outside it). */
function loader(name: string, buf: string, vec: boolean, packed: boolean): string {
  if (vec) {
    const value = packed
      ? `vec4<f32>(unpack2(${buf}[(r * cols + c) / 2u]), unpack2(${buf}[(r * cols + c) / 2u + 1u]))`
      : `vec4<f32>(${buf}[(r * cols + c) / 4u])`;
    return `fn ${name}(r: u32, c: u32, rows: u32, cols: u32) -> vec4<f32> {
  if (r < rows && c < cols) { return ${value}; }
  return vec4<f32>(0.0);
}`;
  }
  const at = (j: number): string => `r * cols + c + ${j}u`;
  const value = (j: number): string =>
    packed ? `unpack2(${buf}[(${at(j)}) / 2u])[(${at(j)}) % 2u]` : `f32(${buf}[${at(j)}])`;
  const el = (j: number): string => `select(0.0, ${value(j)}, r < rows && c + ${j}u < cols)`;
  return `fn ${name}(r: u32, c: u32, rows: u32, cols: u32) -> vec4<f32> {
  if (r >= rows) { return vec4<f32>(0.0); }
  return vec4<f32>(${[0, 1, 2, 3].map(el).join(', ')});
}`;
}

/** Storing a thread's 4 consecutive results of row r from column c (skipping what lies outside C). */
function storer(v: GemmVariant): string {
  const T = v.dtype;
  if (isPacked(v.dtype) && v.vecC) {
    const old = v.betaZero ? '' : ' + P.beta * vec4<f32>(unpack2(C[w]), unpack2(C[w + 1u]))';
    return `if (r < P.m && c < P.n) {
    let w = (r * P.n + c) / 2u;
    let v = P.alpha * acc${old};
    C[w] = pack2(v.xy);
    C[w + 1u] = pack2(v.zw);
  }`;
  }
  if (isPacked(v.dtype)) {
    // Neighbouring threads may share a word: each writes only its half, atomically.
    const old = v.betaZero ? '' : ' + P.beta * unpack2(atomicLoad(&C[i / 2u]))[i % 2u]';
    return `if (r >= P.m) { return; }
  for (var e = 0u; e < 4u; e = e + 1u) {
    if (c + e < P.n) {
      let i = r * P.n + c + e;
      let shift = (i % 2u) * 16u;
      let value = P.alpha * acc[e]${old};
      atomicAnd(&C[i / 2u], ~(0xffffu << shift));
      atomicOr(&C[i / 2u], bits16(value) << shift);
    }
  }`;
  }
  if (v.vecC) {
    const old = v.betaZero ? '' : ' + P.beta * vec4<f32>(C[(r * P.n + c) / 4u])';
    return `if (r < P.m && c < P.n) {
    C[(r * P.n + c) / 4u] = vec4<${T}>(P.alpha * acc${old});
  }`;
  }
  const old = v.betaZero ? '' : ` + P.beta * f32(C[r * P.n + c + e])`;
  return `if (r >= P.m) { return; }
  for (var e = 0u; e < 4u; e = e + 1u) {
    if (c + e < P.n) { C[r * P.n + c + e] = ${T}(P.alpha * acc[e]${old}); }
  }`;
}

/**
 * Moving one operand's tile from global memory into workgroup memory, split in two so the global
 * loads for the next tile are issued before computing on the current one (register prefetch):
 * `load` fills registers from k-offset `kn`, `store` writes them into the tile buffer at `buf`. A tile
 * keeps the matrix's own layout, so every store is a whole vec4 (no per-component scatter, which
 * would leave neighbouring invocations writing parts of one vec4): `alongTile` (A not transposed, B
 * transposed) is [extent][BK/4] with k contiguous, otherwise [BK][extent/4]. The compute loop reads
 * either layout in 4x4 register blocks with static swizzles.
 */
function tileIO(
  name: string,
  extent: number,
  bk: number,
  alongTile: boolean,
  origin: string,
  rows: string,
  cols: string,
): { decl: string; load: string; store: string } {
  const count = (extent * bk) / 4; // vec4s per tile
  const decl: string[] = [];
  const load: string[] = [];
  const store: string[] = [];
  for (let l = 0; l < Math.ceil(count / 256); l++) {
    const reg = `r${name}${l}`;
    const idx = `(t + ${l * 256}u)`;
    const guard = count % 256 !== 0 ? `if (${idx} < ${count}u) ` : '';
    decl.push(`var ${reg} = vec4<f32>(0.0);`);
    if (alongTile) {
      const r = `(${idx} / ${bk / 4}u)`;
      const kv = `((${idx} % ${bk / 4}u) * 4u)`;
      load.push(`${guard}{ ${reg} = ld${name}(${origin} + ${r}, kn + ${kv}, ${rows}, ${cols}); }`);
      // [extent][BK/4]: row r, k-quad kv/4 sits at r * BK/4 + kv/4, which is idx itself.
      store.push(`${guard}{ ${name}s[buf + ${idx}] = ${reg}; }`);
    } else {
      const kk = `(${idx} / ${extent / 4}u)`;
      const cv = `(${idx} % ${extent / 4}u)`;
      load.push(`${guard}{ ${reg} = ld${name}(kn + ${kk}, ${origin} + ${cv} * 4u, ${rows}, ${cols}); }`);
      store.push(`${guard}{ ${name}s[buf + ${kk} * ${extent / 4}u + ${cv}] = ${reg}; }`);
    }
  }
  return { decl: decl.join('\n  '), load: load.join('\n    '), store: store.join('\n    ') };
}

const COMP = ['x', 'y', 'z', 'w'];

export function gemmWgsl(v: GemmVariant): string {
  const { tm, tn } = v;
  const T = v.dtype;
  const gm = tm / 4;
  const gn = tn / 4;
  const packed = isPacked(T);
  const arr = (vec: boolean, atomic = false): string =>
    packed ? (atomic ? 'array<atomic<u32>>' : 'array<u32>') : vec ? `array<vec4<${T}>>` : `array<${T}>`;
  // Per 4-deep k block: A(g, j, q) is the scalar for row g*64 + ty*4 + j at depth q, B(c, q) the vec4
  // of columns c*64 + tx*4 .. +3 at depth q, both read from whichever tile layout the operand has.
  const A = (g: number, j: number, q: number): string =>
    v.transA ? `a${g}_${q}.${COMP[j]}` : `a${g}_${j}.${COMP[q]}`;
  const B = (c: number, q: number): string => (v.transB ? `bb${c}_${q}` : `b${c}_${q}`);
  const accs: string[] = [];
  const stores: string[] = [];
  const blockLoads: string[] = [];
  const fmas: string[] = [];
  for (let g = 0; g < gm; g++)
    for (let i = 0; i < 4; i++)
      blockLoads.push(
        v.transA
          ? `let a${g}_${i} = As[aBase + (kq * 4u + ${i}u) * (BM / 4u) + ${g * 16}u + ty];`
          : `let a${g}_${i} = As[aBase + (${g * 64}u + ty * 4u + ${i}u) * (BK / 4u) + kq];`,
      );
  for (let c = 0; c < gn; c++) {
    for (let i = 0; i < 4; i++)
      blockLoads.push(
        v.transB
          ? `let b${c}_${i} = Bs[bBase + (${c * 64}u + tx * 4u + ${i}u) * (BK / 4u) + kq];`
          : `let b${c}_${i} = Bs[bBase + (kq * 4u + ${i}u) * (BN / 4u) + ${c * 16}u + tx];`,
      );
    if (v.transB)
      for (let q = 0; q < 4; q++)
        blockLoads.push(
          `let bb${c}_${q} = vec4<f32>(${[0, 1, 2, 3].map((e) => `b${c}_${e}.${COMP[q]}`).join(', ')});`,
        );
  }
  for (let g = 0; g < gm; g++)
    for (let j = 0; j < 4; j++)
      for (let c = 0; c < gn; c++) {
        const r = g * 4 + j;
        accs.push(`var acc_${r}_${c} = vec4<f32>(0.0);`);
        stores.push(
          `store(row0 + ${g * 64}u + ty * 4u + ${j}u, col0 + ${c * 64}u + tx * 4u, acc_${r}_${c});`,
        );
      }
  for (let q = 0; q < 4; q++)
    for (let g = 0; g < gm; g++)
      for (let j = 0; j < 4; j++)
        for (let c = 0; c < gn; c++)
          fmas.push(
            `acc_${g * 4 + j}_${c} = fma(vec4<f32>(${A(g, j, q)}), ${B(c, q)}, acc_${g * 4 + j}_${c});`,
          );
  const ioA = v.transA
    ? tileIO('A', 16 * tm, v.bk, false, 'row0', 'P.k', 'P.m')
    : tileIO('A', 16 * tm, v.bk, true, 'row0', 'P.m', 'P.k');
  const ioB = v.transB
    ? tileIO('B', 16 * tn, v.bk, true, 'col0', 'P.n', 'P.k')
    : tileIO('B', 16 * tn, v.bk, false, 'col0', 'P.k', 'P.n');
  return `${T === 'f16' ? 'enable f16;\n' : ''}struct Params { m: u32, n: u32, k: u32, alpha: f32, beta: f32 }
@group(0) @binding(0) var<storage, read> A: ${arr(v.vecA)};
@group(0) @binding(1) var<storage, read> B: ${arr(v.vecB)};
@group(0) @binding(2) var<storage, read_write> C: ${arr(v.vecC, !v.vecC)};
@group(0) @binding(3) var<uniform> P: Params;
const BM = ${16 * tm}u;
const BN = ${16 * tn}u;
const BK = ${v.bk}u;
// Two buffers per operand: the next tile is written into one while the other is read (one barrier per step).
var<workgroup> As: array<vec4<f32>, ${(2 * 16 * tm * v.bk) / 4}>;
var<workgroup> Bs: array<vec4<f32>, ${(2 * 16 * tn * v.bk) / 4}>;
${isPacked(T) ? packingWgsl(T) : ''}${loader('ldA', 'A', v.vecA, packed)}
${loader('ldB', 'B', v.vecB, packed)}
fn store(r: u32, c: u32, acc: vec4<f32>) {
  ${storer(v)}
}
@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let tx = lid.x;
  let ty = lid.y;
  let t = ty * 16u + tx;
  let row0 = wid.y * BM;
  let col0 = wid.x * BN;
  ${accs.join('\n  ')}
  ${ioA.decl}
  ${ioB.decl}
  let tiles = (P.k + BK - 1u) / BK;
  var kn = 0u;
  var buf = 0u;
  if (tiles > 0u) {
    ${ioA.load}
    ${ioB.load}
    ${ioA.store}
    ${ioB.store}
  }
  workgroupBarrier();
  for (var tile = 0u; tile < tiles; tile = tile + 1u) {
    let cur = tile % 2u;
    let aBase = cur * (BK * BM / 4u);
    let bBase = cur * (BK * BN / 4u);
    let more = tile + 1u < tiles;
    kn = (tile + 1u) * BK;
    if (more) {
      ${ioA.load}
      ${ioB.load}
    }
    for (var kq = 0u; kq < BK / 4u; kq = kq + 1u) {
      ${blockLoads.join('\n      ')}
      ${fmas.join('\n      ')}
    }
    if (more) {
      buf = (1u - cur) * (BK * BM / 4u);
      ${ioA.store}
      buf = (1u - cur) * (BK * BN / 4u);
      ${ioB.store}
    }
    workgroupBarrier();
  }
  ${stores.join('\n  ')}
}
`;
}

/** Workgroup memory a tiling needs: two f32 tile buffers per operand. WebGPU guarantees 16 KiB. */
export function workgroupBytes(t: GemmTiling): number {
  return 2 * 16 * (t.tm + t.tn) * t.bk * 4;
}

function gemmDType(args: readonly TensorDesc[]): 'f32' | 'f16' | 'bf16' | undefined {
  const d = args[0]?.dtype;
  if (args.length !== 3 || !args.every((a) => a.dtype === d)) return undefined;
  return d === 'f32' || d === 'f16' || d === 'bf16' ? d : undefined;
}

/** A GEMM kernel with a fixed tiling, or (no argument) the default choice by problem size. */
export function makeGemmWebGpu(tiling?: GemmTiling): WebGpuKernel {
  return {
    kind: 'webgpu-kernel',
    supports(args, _scalars, f: WebGpuFeatures) {
      const d = gemmDType(args);
      const fits = tiling === undefined || workgroupBytes(tiling) <= f.maxWorkgroupStorageBytes;
      return fits && d !== undefined;
    },
    plan(args, scalars: Scalars, f: WebGpuFeatures): readonly WebGpuStep[] {
      const [a, b] = args as [TensorDesc, TensorDesc, TensorDesc];
      const p = gemmParams(scalars);
      const { m, n, k } = gemmDims(a, b, p);
      // Large tiles leave most of the GPU idle on small problems: fall back to 64x64 tiles.
      const t = tiling ?? (Math.ceil(m / 128) * Math.ceil(n / 128) >= 64 ? GEMM_LARGE : GEMM_SMALL);
      const variant: GemmVariant = {
        ...t,
        dtype: floatStorage(gemmDType(args) ?? 'f32', f)!,
        transA: p.transA,
        transB: p.transB,
        vecA: (p.transA ? m : k) % 4 === 0,
        vecB: (p.transB ? k : n) % 4 === 0,
        vecC: n % 4 === 0,
        betaZero: p.beta === 0,
      };
      return [
        {
          kind: 'dispatch',
          wgsl: gemmWgsl(variant),
          entry: 'main',
          bind: [0, 1, 2],
          uniforms: [
            { type: 'u32', value: m },
            { type: 'u32', value: n },
            { type: 'u32', value: k },
            { type: 'f32', value: p.alpha },
            { type: 'f32', value: p.beta },
          ],
          workgroups: [Math.ceil(n / (16 * t.tn)), Math.ceil(m / (16 * t.tm)), 1],
        },
      ];
    },
  };
}

export const gemmWebGpu: WebGpuKernel = makeGemmWebGpu();
