/**
 * Initial state as LAMMPS builds it for in.lj: `lattice fcc rho`, `create_atoms 1 box`, and
 * `velocity all create T seed loop geom` (uniform distribution, zero momentum, exact rescale to T with
 * 3N-3 degrees of freedom). Loop geom seeds the generator from each atom's coordinates, so the velocities
 * do not depend on atom order and match LAMMPS bit for bit when the coordinates do.
 */
import type { MdConfig } from './params.js';
import { latticeConstant } from './params.js';

export interface MdState {
  readonly n: number;
  /** Box edge lengths; the box is [0, L) on each axis. */
  readonly box: readonly [number, number, number];
  /** Interleaved xyz, length 3n. */
  readonly x: Float64Array;
  readonly v: Float64Array;
  readonly f: Float64Array;
}

const FCC_BASIS = [
  [0.0, 0.0, 0.0],
  [0.5, 0.5, 0.0],
  [0.5, 0.0, 0.5],
  [0.0, 0.5, 0.5],
] as const;

/** fcc atoms in LAMMPS create_atoms order (k, j, i, basis), each coordinate (i + b) * scale as lattice2box does. */
export function createFcc(config: Pick<MdConfig, 'cells' | 'density'>): MdState {
  const [nx, ny, nz] = config.cells;
  const a = latticeConstant(config.density);
  const n = 4 * nx * ny * nz;
  const x = new Float64Array(3 * n);
  let p = 0;
  for (let k = 0; k < nz; k++)
    for (let j = 0; j < ny; j++)
      for (let i = 0; i < nx; i++)
        for (const b of FCC_BASIS) {
          x[p++] = (i + b[0]) * a;
          x[p++] = (j + b[1]) * a;
          x[p++] = (k + b[2]) * a;
        }
  return { n, box: [nx * a, ny * a, nz * a], x, v: new Float64Array(3 * n), f: new Float64Array(3 * n) };
}

// Scratch for RanPark's coordinate hash (reused: millions of atoms hash one after another).
const HASH_BYTES = new Uint8Array(28);
const HASH_VIEW = new DataView(HASH_BYTES.buffer);

/** LAMMPS RanPark: Park–Miller minimal standard generator with Schrage's factorisation. */
export class RanPark {
  constructor(private seed: number) {}

  uniform(): number {
    const k = Math.trunc(this.seed / 127773);
    this.seed = 16807 * (this.seed - k * 127773) - 2836 * k;
    if (this.seed < 0) this.seed += 2147483647;
    return (1.0 / 2147483647) * this.seed;
  }

  /** RanPark::reset(ibase, coord): Jenkins one-at-a-time hash of the seed's and the coordinates' bytes. */
  resetFromCoords(ibase: number, x: number, y: number, z: number): void {
    const bytes = HASH_BYTES;
    const view = HASH_VIEW;
    view.setInt32(0, ibase, true);
    view.setFloat64(4, x, true);
    view.setFloat64(12, y, true);
    view.setFloat64(20, z, true);
    let hash = 0;
    for (let i = 0; i < 28; i++) {
      // LAMMPS reads the bytes through `char *`, which is signed on x86: bytes >= 128 add a negative value.
      const b = bytes[i]!;
      hash = (hash + (b >= 128 ? b - 256 : b)) >>> 0;
      hash = (hash + (hash << 10)) >>> 0;
      hash = (hash ^ (hash >>> 6)) >>> 0;
    }
    hash = (hash + (hash << 3)) >>> 0;
    hash = (hash ^ (hash >>> 11)) >>> 0;
    hash = (hash + (hash << 15)) >>> 0;
    // The mask is 0x7ffffff (27 bits) in LAMMPS despite its comment saying 31: keep it to match.
    this.seed = hash & 0x7ffffff;
    if (this.seed === 0) this.seed = 1;
    for (let i = 0; i < 5; i++) this.uniform();
  }
}

export function kineticEnergy(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return 0.5 * s;
}

/** Degrees of freedom of LAMMPS `compute temp` in 3d: 3N minus the 3 of the centre-of-mass motion. */
export function degreesOfFreedom(n: number): number {
  return 3 * n - 3;
}

export function temperatureOf(v: ArrayLike<number>): number {
  return (2 * kineticEnergy(v)) / degreesOfFreedom(v.length / 3);
}

/** `velocity all create T seed loop geom` with unit masses: uniform(-0.5, 0.5), zero momentum, rescale to T. */
export function createVelocities(state: MdState, temperature: number, seed: number): void {
  const { x, v, n } = state;
  const rng = new RanPark(1);
  for (let i = 0; i < n; i++) {
    rng.resetFromCoords(seed, x[3 * i]!, x[3 * i + 1]!, x[3 * i + 2]!);
    v[3 * i] = rng.uniform() - 0.5;
    v[3 * i + 1] = rng.uniform() - 0.5;
    v[3 * i + 2] = rng.uniform() - 0.5;
  }
  const vcm = [0, 0, 0];
  for (let i = 0; i < n; i++) for (let d = 0; d < 3; d++) vcm[d]! += v[3 * i + d]!;
  for (let d = 0; d < 3; d++) vcm[d]! /= n;
  for (let i = 0; i < n; i++) for (let d = 0; d < 3; d++) v[3 * i + d]! -= vcm[d]!;
  const factor = Math.sqrt(temperature / temperatureOf(v));
  for (let i = 0; i < v.length; i++) v[i]! *= factor;
}
