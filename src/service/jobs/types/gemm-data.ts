/**
 * The gemm job's data and its float64 check, shared by the CPU worker kernels (gemm-cpu.ts) and the
 * host fallback in gemm.ts. Inputs come from the counter-based generator of core/seeded-random.ts, so
 * any element can be made anywhere (inside a worker next to the data, or again on the host) without
 * copying matrices around.
 */
import { epsilon, fromNumbers, toNumbers, type DType, type HostArray } from '../../../core/dtype.js';
import { bitsAt, unitAt } from '../../../core/seeded-random.js';

/** The key of one matrix of a job: `which` is 0 for A, 1 for B (values 0 and 1 of the seed's stream). */
export function streamKey(seed: number, which: 0 | 1): number {
  return bitsAt(seed, which);
}

/** Element `index` of a stream: uniform in [-1, 1), never exactly zero (a zero input hides bugs). */
export function uniformAt(key: number, index: number): number {
  return -1 + 2 * unitAt(key, index) || 0.5;
}

const CHUNK = 4096;

/** out[k] = element first + k of the stream, rounded to the dtype (16-bit types as raw words). */
export function fillUniform(dtype: DType, out: HostArray, key: number, first: number): void {
  if (dtype === 'f32' || dtype === 'f64') {
    for (let k = 0; k < out.length; k++) out[k] = uniformAt(key, first + k);
    return;
  }
  const vals = new Float64Array(Math.min(CHUNK, out.length));
  for (let base = 0; base < out.length; base += CHUNK) {
    const len = Math.min(CHUNK, out.length - base);
    for (let k = 0; k < len; k++) vals[k] = uniformAt(key, first + base + k);
    fromNumbers(dtype, vals.subarray(0, len), out.subarray(base, base + len));
  }
}

/** Row `row` of A (n columns) as the device holds it (rounded to the dtype), widened to float64. */
export function regenerateRow(dtype: DType, n: number, key: number, row: number): Float64Array {
  const raw =
    dtype === 'f64' ? new Float64Array(n) : dtype === 'f32' ? new Float32Array(n) : new Uint16Array(n);
  fillUniform(dtype, raw, key, row * n);
  return raw instanceof Float64Array ? raw : toNumbers(dtype, raw);
}

/**
 * Float64 reference rows ref[r] = aRows[r] · B for B k×n in the dtype's storage, one pass over B's
 * rows (each widened once). `from`/`to` bound the rows of B this call covers (callers slice for yields).
 */
export function accumulateReference(
  dtype: DType,
  n: number,
  aRows: readonly Float64Array[],
  b: HostArray,
  refs: readonly Float64Array[],
  from: number,
  to: number,
): void {
  const plain = b instanceof Float32Array || b instanceof Float64Array;
  for (let q = from; q < to; q++) {
    const bq = plain ? b.subarray(q * n, (q + 1) * n) : toNumbers(dtype, b.subarray(q * n, (q + 1) * n));
    for (let r = 0; r < aRows.length; r++) {
      const aq = aRows[r]![q]!;
      const ref = refs[r]!;
      for (let j = 0; j < n; j++) ref[j] += aq * bq[j]!;
    }
  }
}

export interface CheckResult {
  readonly maxRelError: number;
  readonly tolerance: number;
  readonly rowsChecked: number;
  readonly ok: boolean;
}

/** Max relative error (scaled by each row's largest reference value) of computed rows against references. */
export function compareRows(
  dtype: DType,
  n: number,
  got: readonly ArrayLike<number>[],
  refs: readonly ArrayLike<number>[],
): CheckResult {
  let maxRel = 0;
  for (let r = 0; r < refs.length; r++) {
    const ref = refs[r]!;
    const g = got[r]!;
    let scale = 1e-30;
    for (let j = 0; j < n; j++) scale = Math.max(scale, Math.abs(ref[j]!));
    for (let j = 0; j < n; j++) {
      const err = Math.abs(g[j]! - ref[j]!) / scale;
      maxRel = Number.isNaN(err) ? Infinity : Math.max(maxRel, err);
    }
  }
  const accEps = dtype === 'f64' ? epsilon('f64') : epsilon('f32');
  // Output rounding plus ~sqrt(k) ulps of accumulation. The job asks for plain f32 (never tf32), so no
  // backend may round the inputs to 10-bit mantissas: a tf32-sized error would be a real failure here.
  const tolerance = 4 * epsilon(dtype) + 8 * Math.sqrt(n) * accEps;
  return { maxRelError: maxRel, tolerance, rowsChecked: refs.length, ok: maxRel <= tolerance };
}
