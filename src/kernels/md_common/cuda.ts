/**
 * CUDA versions of the MD ops, f32, one thread per atom. The neighbour build bins atoms into cells of
 * fixed capacity with atomics (scratch memory), then each atom scans the 27 surrounding cells and writes
 * its partners into the transposed list [cap, n] so that the force kernel's loads coalesce. The force
 * kernel uses the full list: no atomics, each atom sums its own partners.
 */
import { TandemError } from '../../core/errors.js';
import type {
  CudaArg,
  CudaKernelContext,
  CudaNative,
  CudaParam,
  CudaProgram,
} from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { boolScalar, intScalar, numberScalar } from '../common/scalars.js';
import { boxOf, listFlags } from './defs.js';
import { ljShift } from './lj.js';

const T = 256;

export const MD_CUDA_SOURCE = `
extern "C" __global__ void tdm_md_zero(int* __restrict__ p, long long m) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m; i += (long long)gridDim.x * blockDim.x) p[i] = 0;
}
static __device__ __forceinline__ int tdm_cell(float p, float L, int c) {
  int k = (int)(p / L * c);
  return k < 0 ? 0 : k >= c ? c - 1 : k;
}
extern "C" __global__ void tdm_md_bin(float* __restrict__ x, int* __restrict__ cellCount, int* __restrict__ cellAtoms,
    int* __restrict__ meta, int n, float lx, float ly, float lz, int cx, int cy, int cz, int ccap) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float p[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
  const float L[3] = {lx, ly, lz};
  for (int d = 0; d < 3; d++) {
    if (!isfinite(p[d])) { atomicOr(&meta[1], 1); return; }
    p[d] -= L[d] * floorf(p[d] / L[d]);
    if (p[d] >= L[d]) p[d] -= L[d];
    x[3 * i + d] = p[d];
  }
  const int c = (tdm_cell(p[2], lz, cz) * cy + tdm_cell(p[1], ly, cy)) * cx + tdm_cell(p[0], lx, cx);
  const int slot = atomicAdd(&cellCount[c], 1);
  if (slot < ccap) cellAtoms[(long long)c * ccap + slot] = i; else atomicOr(&meta[1], 2);
}
extern "C" __global__ void tdm_md_build(const float* __restrict__ x, const int* __restrict__ cellCount,
    const int* __restrict__ cellAtoms, int* __restrict__ nbr, int* __restrict__ ncount, int* __restrict__ meta,
    int n, int cap, float lx, float ly, float lz, int cx, int cy, int cz, int ccap, float range2, int half) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
  const int ix = tdm_cell(xi, lx, cx), iy = tdm_cell(yi, ly, cy), iz = tdm_cell(zi, lz, cz);
  int cnt = 0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        const int c = (((iz + dz + cz) % cz) * cy + ((iy + dy + cy) % cy)) * cx + ((ix + dx + cx) % cx);
        const int m = min(cellCount[c], ccap);
        for (int q = 0; q < m; q++) {
          const int j = cellAtoms[(long long)c * ccap + q];
          if (half ? j <= i : j == i) continue;
          float ddx = xi - x[3 * j], ddy = yi - x[3 * j + 1], ddz = zi - x[3 * j + 2];
          ddx -= lx * rintf(ddx / lx); ddy -= ly * rintf(ddy / ly); ddz -= lz * rintf(ddz / lz);
          if (ddx * ddx + ddy * ddy + ddz * ddz < range2) {
            if (cnt < cap) nbr[(long long)cnt * n + i] = j;
            cnt++;
          }
        }
      }
  ncount[i] = min(cnt, cap);
  atomicMax(&meta[0], cnt);
}
extern "C" __global__ void __launch_bounds__(${T}) tdm_lj_forces(const float* __restrict__ x, const int* __restrict__ nbr,
    const int* __restrict__ ncount, float* __restrict__ f, float* __restrict__ ev, int n,
    float lx, float ly, float lz, float rc2, float eshift) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
  const float ilx = 1.f / lx, ily = 1.f / ly, ilz = 1.f / lz;
  float fx = 0.f, fy = 0.f, fz = 0.f, e = 0.f, w = 0.f;
  const int m = ncount[i];
  for (int k = 0; k < m; k++) {
    const int j = nbr[(long long)k * n + i];
    float dx = xi - x[3 * j], dy = yi - x[3 * j + 1], dz = zi - x[3 * j + 2];
    dx -= lx * rintf(dx * ilx); dy -= ly * rintf(dy * ily); dz -= lz * rintf(dz * ilz);
    const float r2 = dx * dx + dy * dy + dz * dz;
    if (r2 < rc2) {
      const float r2i = 1.f / r2, r6i = r2i * r2i * r2i;
      const float fpair = r6i * (48.f * r6i - 24.f) * r2i;
      fx += dx * fpair; fy += dy * fpair; fz += dz * fpair;
      e += 4.f * r6i * (r6i - 1.f) - eshift;
      w += r2 * fpair;
    }
  }
  f[3 * i] = fx; f[3 * i + 1] = fy; f[3 * i + 2] = fz;
  ev[2 * i] = 0.5f * e; ev[2 * i + 1] = 0.5f * w;
}
extern "C" __global__ void tdm_md_integrate(float* __restrict__ x, float* __restrict__ v, const float* __restrict__ f,
    long long m, float dt, int stage) {
  const float h = 0.5f * dt;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m; i += (long long)gridDim.x * blockDim.x) {
    const float vi = v[i] + h * f[i];
    v[i] = vi;
    if (stage == 1) x[i] += dt * vi;
  }
}
`;

function program(
  entry: string,
  rest: Omit<CudaProgram, 'kind' | 'source' | 'entry' | 'prelude'>,
): CudaProgram {
  return { kind: 'program', source: MD_CUDA_SOURCE, entry, prelude: false, ...rest };
}

const grid1 = (n: number): [number, number, number] => [Math.max(1, Math.ceil(n / T)), 1, 1];
const atoms = (a: { desc: { shape: readonly number[] } }): number => a.desc.shape[0]!;

export const ljForcesCuda: CudaProgram = program('tdm_lj_forces', {
  grid: (args) => grid1(atoms(args[0]!)),
  block: () => [T, 1, 1],
  params: (args, s) => {
    const box = boxOf('lj_forces', s);
    const rc = numberScalar('lj_forces', s, 'cutoff');
    return [
      { kind: 'ptr', arg: 0 },
      { kind: 'ptr', arg: 1 },
      { kind: 'ptr', arg: 2 },
      { kind: 'ptr', arg: 3 },
      { kind: 'ptr', arg: 4 },
      { kind: 'i32', value: atoms(args[0]!) },
      { kind: 'f32', value: box.lx },
      { kind: 'f32', value: box.ly },
      { kind: 'f32', value: box.lz },
      { kind: 'f32', value: rc * rc },
      { kind: 'f32', value: ljShift(rc, boolScalar('lj_forces', s, 'shift', false)) },
    ];
  },
});

export const mdIntegrateCuda: CudaProgram = program('tdm_md_integrate', {
  grid: (args) => [Math.min(65536, Math.ceil((3 * atoms(args[0]!)) / T)), 1, 1],
  block: () => [T, 1, 1],
  params: (args, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i64', value: 3 * atoms(args[0]!) },
    { kind: 'f32', value: numberScalar('md_integrate', s, 'dt') },
    { kind: 'i32', value: intScalar('md_integrate', s, 'stage') },
  ],
});

/** Cell capacity: mean occupancy at liquid density is ~20 for the LJ range; overflow is flagged in meta. */
const CELL_CAP = 64;

// The neighbour build's programs are static objects (the program cache keys compiled functions by
// program identity); what varies per call (scratch addresses, grid of cells) travels in the launch's
// scalars, which the native impl fills in.
const num = (s: Scalars, k: string): number => s[k] as number;
const GEO = (s: Scalars): CudaParam[] => [
  { kind: 'f32', value: num(s, 'lx') },
  { kind: 'f32', value: num(s, 'ly') },
  { kind: 'f32', value: num(s, 'lz') },
  { kind: 'i32', value: num(s, 'cx') },
  { kind: 'i32', value: num(s, 'cy') },
  { kind: 'i32', value: num(s, 'cz') },
  { kind: 'i32', value: CELL_CAP },
];

const ZERO = program('tdm_md_zero', {
  grid: (_a, s) => [Math.max(1, Math.min(65536, Math.ceil(num(s, 'm') / T))), 1, 1],
  block: () => [T, 1, 1],
  params: (_a, s) => [
    num(s, 'ptr') >= 0 ? { kind: 'addr', value: num(s, 'ptr') } : { kind: 'ptr', arg: -num(s, 'ptr') - 1 },
    { kind: 'i64', value: num(s, 'm') },
  ],
});

const BIN = program('tdm_md_bin', {
  grid: (_a, s) => grid1(num(s, 'n')),
  block: () => [T, 1, 1],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'addr', value: num(s, 'counts') },
    { kind: 'addr', value: num(s, 'cellAtoms') },
    { kind: 'ptr', arg: 3 },
    { kind: 'i32', value: num(s, 'n') },
    ...GEO(s),
  ],
});

const BUILD = program('tdm_md_build', {
  grid: (_a, s) => grid1(num(s, 'n')),
  block: () => [T, 1, 1],
  params: (_a, s) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'addr', value: num(s, 'counts') },
    { kind: 'addr', value: num(s, 'cellAtoms') },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'ptr', arg: 3 },
    { kind: 'i32', value: num(s, 'n') },
    { kind: 'i32', value: num(s, 'cap') },
    ...GEO(s),
    { kind: 'f32', value: num(s, 'range2') },
    { kind: 'i32', value: num(s, 'half') },
  ],
});

export const mdNeighborsCuda: CudaNative = {
  kind: 'native',
  run(ctx: CudaKernelContext, args: readonly CudaArg[], s: Scalars) {
    const { half, transposed } = listFlags('md_neighbors', s);
    if (!transposed || args[0]!.desc.dtype !== 'f32') {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'md_neighbors on CUDA builds f32 transposed lists only',
      );
    }
    const n = atoms(args[0]!);
    const box = boxOf('md_neighbors', s);
    const range = numberScalar('md_neighbors', s, 'range');
    const [cx, cy, cz] = [box.lx, box.ly, box.lz].map((L) => Math.max(1, Math.floor(L / range))) as [
      number,
      number,
      number,
    ];
    if (cx < 3 || cy < 3 || cz < 3) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'md_neighbors on CUDA needs at least 3 cells per side (a larger box)',
      );
    }
    const ncell = cx * cy * cz;
    const counts = ctx.scratch(ncell * 4);
    const cellAtoms = ctx.scratch(ncell * CELL_CAP * 4);
    ctx.launch(ZERO, args, { ptr: counts, m: ncell });
    ctx.launch(ZERO, args, { ptr: -4, m: 2 }); // meta (argument 3) := 0
    const common = { ...box, cx, cy, cz, n, counts, cellAtoms };
    ctx.launch(BIN, args, common);
    ctx.launch(BUILD, args, {
      ...common,
      cap: args[1]!.desc.shape[0]!,
      range2: range * range,
      half: half ? 1 : 0,
    });
  },
};
