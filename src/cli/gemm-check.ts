/** Random GEMM operands and a float64 check of sampled rows (a full reference at n=8192 would take hours). */
import type { DType, HostArray } from '../core/dtype.js';
import { fromNumbers, hostView, toNumbers, epsilon, bytesPerElement } from '../core/dtype.js';
import { fillRandom } from '../core/seeded-random.js';

/** n seeded values in [-1, 1), never zero, rounded to the dtype (16-bit types as raw words). */
export function randomData(dtype: DType, n: number, seed: number): HostArray {
  const out = hostView(dtype, new ArrayBuffer(n * bytesPerElement(dtype)), 0, n);
  fromNumbers(dtype, fillRandom(new Float64Array(n), seed), out);
  return out;
}

export interface GemmCheck {
  readonly maxRelError: number;
  readonly tolerance: number;
  readonly rowsChecked: number;
  readonly ok: boolean;
}

/** Compares rows of C = A·B (row-major, no transposes) with a float64 product of the stored inputs. */
export function checkGemmRows(
  dtype: DType,
  m: number,
  n: number,
  k: number,
  a: HostArray,
  b: HostArray,
  c: HostArray,
  rows = 8,
  precision = 'default',
): GemmCheck {
  const A = toNumbers(dtype, a);
  const B = toNumbers(dtype, b);
  const C = toNumbers(dtype, c);
  let maxRel = 0;
  const picked = new Set<number>([0, m - 1]);
  for (let i = 0; picked.size < Math.min(rows, m); i++) picked.add(Math.floor(((i * 2654435761) >>> 0) % m));
  const ref = new Float64Array(n);
  for (const i of picked) {
    ref.fill(0);
    let scale = 0;
    for (let q = 0; q < k; q++) {
      const aiq = A[i * k + q]!;
      for (let j = 0; j < n; j++) ref[j] += aiq * B[q * n + j]!;
    }
    for (let j = 0; j < n; j++) scale = Math.max(scale, Math.abs(ref[j]!));
    for (let j = 0; j < n; j++) {
      const err = Math.abs(C[i * n + j]! - ref[j]!) / Math.max(scale, 1e-30);
      if (!(err <= maxRel)) maxRel = Number.isNaN(err) ? Infinity : Math.max(maxRel, err);
    }
  }
  // Rounding of the output plus accumulated error ~ sqrt(k) ulps of the accumulation type.
  const accEps = dtype === 'f64' ? epsilon('f64') : precision === 'tf32' ? 2 ** -10 : epsilon('f32');
  const tolerance = 4 * epsilon(dtype) + 8 * Math.sqrt(k) * accEps;
  return { maxRelError: maxRel, tolerance, rowsChecked: picked.size, ok: maxRel <= tolerance };
}
