/**
 * Turns a conformance case into inputs and expected outputs, and checks a backend's outputs against
 * them. Any backend can run the same cases: fill its tensors from `initial`, run the op, read back the
 * written arguments and pass them to `checkCase`.
 */
import {
  type DType,
  type HostArray,
  bytesPerElement,
  fromNumbers,
  hostView,
  isFloat,
  toNumbers,
} from '../core/dtype.js';
import { seededRandom } from '../core/seeded-random.js';
import { numel } from '../core/shape.js';
import type { TensorDesc } from '../devices/device.js';
import type { RefArg } from './common/reference.js';
import type { ConformanceCase, ValueRange } from './case-types.js';
import { argMode, type KernelDef } from './kernel.js';
import { REFERENCES } from './references.js';

export interface PreparedCase {
  readonly descs: Readonly<Record<string, TensorDesc>>;
  /** Initial contents of every argument in its storage dtype: random inputs, NaN-poisoned outputs. */
  readonly initial: Readonly<Record<string, HostArray>>;
  /** Names of the arguments the op writes (w or rw), in the op's argument order. */
  readonly outputs: readonly string[];
  readonly expected: Readonly<Record<string, Float64Array>>;
}

function draw(range: ValueRange, rnd: () => number, max = 1, min = 0): number {
  if (range === 'index') return min + Math.floor((max - min) * rnd());
  if (range === 'inf') return Infinity;
  if (range === 'nan') return NaN;
  const sign = rnd() < 0.5 ? -1 : 1;
  switch (range) {
    case 'signed':
      return sign * (0.125 + 0.875 * rnd());
    case 'positive':
      return 0.125 + 1.875 * rnd();
    case 'wide':
      return sign * (0.5 + 299.5 * rnd());
    case 'int':
      return sign * (1 + Math.floor(999 * rnd()));
    case 'byte':
      return 1 + Math.floor(255 * rnd());
  }
}

function defaultRange(dtype: DType): ValueRange {
  return dtype === 'i32' ? 'int' : dtype === 'u8' ? 'byte' : 'signed';
}

/** What an unwritten output element holds: NaN for floats, an unlikely sentinel for integers. */
function poison(dtype: DType, out: HostArray): void {
  if (dtype === 'i32') out.fill(-123456789);
  else if (dtype === 'u8') out.fill(0xab);
  else fromNumbers(dtype, new Float64Array(out.length).fill(NaN), out);
}

export function prepareCase(def: KernelDef, c: ConformanceCase, seed = 1): PreparedCase {
  const rnd = seededRandom(seed);
  const descs: Record<string, TensorDesc> = {};
  const initial: Record<string, HostArray> = {};
  const refArgs: Record<string, RefArg> = {};
  const outputs: string[] = [];
  def.args.forEach((spec, i) => {
    const a = c.args[spec.name]!;
    const n = numel(a.shape);
    const desc: TensorDesc = { shape: [...a.shape], dtype: a.dtype, bytes: n * bytesPerElement(a.dtype) };
    const data = hostView(a.dtype, new ArrayBuffer(desc.bytes), 0, n);
    const mode = argMode(def, i, c.scalars);
    if (mode === 'w') poison(a.dtype, data);
    else {
      const range = a.range ?? defaultRange(a.dtype);
      const values =
        a.values !== undefined
          ? Float64Array.from(a.values)
          : Float64Array.from({ length: n }, () => draw(range, rnd, a.max, a.min));
      fromNumbers(a.dtype, values, data);
    }
    if (mode !== 'r') outputs.push(spec.name);
    descs[spec.name] = desc;
    initial[spec.name] = data;
    // The reference sees exactly the stored values (after rounding to f16/bf16).
    refArgs[spec.name] = { desc, values: toNumbers(a.dtype, data) };
  });
  const reference = REFERENCES[c.op];
  if (reference === undefined) throw new Error(`no reference for op ${c.op}`);
  return { descs, initial, outputs, expected: reference(refArgs, c.scalars) };
}

/** Returns one line per mismatch (at most `limit`), empty when every written argument matches. */
export function checkCase(
  c: ConformanceCase,
  prepared: PreparedCase,
  results: Readonly<Record<string, HostArray>>,
  limit = 5,
): string[] {
  const problems: string[] = [];
  for (const name of prepared.outputs) {
    const dtype = prepared.descs[name]!.dtype;
    const got = toNumbers(dtype, results[name]!);
    const want = prepared.expected[name]!;
    let bad = 0;
    for (let i = 0; i < want.length; i++) {
      const w = want[i]!;
      const g = got[i]!;
      const ok = Number.isNaN(w)
        ? Number.isNaN(g)
        : Math.abs(g - w) <= c.atol + c.rtol * Math.abs(w) || g === w;
      if (!ok) {
        if (bad < limit)
          problems.push(`${c.name}: ${name}[${i}] = ${g}, want ${w} (rtol ${c.rtol}, atol ${c.atol})`);
        bad++;
      }
    }
    if (bad > limit) problems.push(`${c.name}: ${name}: ${bad} of ${want.length} elements differ`);
    if (!isFloat(dtype) && want.some((w) => !Number.isInteger(w)))
      problems.push(`${c.name}: non-integer reference for ${dtype}`);
  }
  return problems;
}
