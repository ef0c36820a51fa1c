/**
 * TfIdfVectorizer (opsets 9–21) on integer tokens: n-gram counts (with skips) against the pool, as TF,
 * IDF or TFIDF. Its input is integer data, which the planner evaluates on the host when known there
 * (like the other integer ops); tokens computed during the run are refused as unsupported. String
 * pools are unsupported (Tandem has no string tensors).
 */
import { fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

interface TfIdfSpec {
  readonly minGram: number;
  readonly maxGram: number;
  readonly maxSkip: number;
  readonly mode: 'TF' | 'IDF' | 'TFIDF';
  /** n-gram (length and tokens joined) → output column. */
  readonly pool: ReadonlyMap<string, number>;
  readonly width: number;
  readonly weights: readonly number[] | undefined;
}

function tfidfSpec(c: OpCall): TfIdfSpec {
  if (c.attrs.has('pool_strings'))
    throw fail(
      c,
      `pool_strings (op TfIdfVectorizer, domain ai.onnx, opset ${c.opset}) are not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  const mode = c.attrs.string('mode', '');
  if (mode !== 'TF' && mode !== 'IDF' && mode !== 'TFIDF')
    throw fail(c, `mode '${mode}' is not TF, IDF or TFIDF`, 'TANDEM_ERR_BAD_DATA');
  const tokens = c.attrs.ints('pool_int64s') ?? [];
  const counts = c.attrs.ints('ngram_counts') ?? [];
  const indexes = c.attrs.ints('ngram_indexes') ?? [];
  const [minGram, maxGram] = [c.attrs.int('min_gram_length'), c.attrs.int('max_gram_length')];
  // n-grams are numbered in pool order over every length; only lengths in [min, max] are looked up.
  const pool = new Map<string, number>();
  let id = 0;
  counts.forEach((start, i) => {
    const n = i + 1;
    const end = counts[i + 1] ?? tokens.length;
    for (let at = start; at + n <= end; at += n, id++)
      if (n >= minGram && n <= maxGram) pool.set(`${n}:${tokens.slice(at, at + n).join(',')}`, indexes[id]!);
  });
  return {
    minGram,
    maxGram,
    maxSkip: c.attrs.int('max_skip_count', 0),
    mode,
    pool,
    width: indexes.length ? Math.max(...indexes) + 1 : 0,
    weights: c.attrs.floats('weights'),
  };
}

function outDims(c: OpCall, width: number): number[] {
  const x = inp(c, 0).dims;
  if (x.length > 2) throw fail(c, `the input must be [C] or [B, C], got [${x.join(', ')}]`);
  return x.length === 2 ? [x[0]!, width] : [width];
}

/** One row's counts: grams of each length starting at every position, items skip + 1 apart. */
function countRow(s: TfIdfSpec, row: ArrayLike<number>, into: Float64Array, base: number): void {
  let first = s.minGram;
  for (let d = 1; d <= s.maxSkip + 1; d++) {
    for (let start = 0; start < row.length; start++)
      for (let n = first; n <= s.maxGram && start + (n - 1) * d < row.length; n++) {
        const gram = Array.from({ length: n }, (_, k) => row[start + k * d]!).join(',');
        const col = s.pool.get(`${n}:${gram}`);
        if (col !== undefined) into[base + col]! += 1;
      }
    // Unigrams do not depend on the skip: counted in the first pass only.
    if (first === 1 && ++first > s.maxGram) break;
  }
}

const tfidfImpl: OpImpl = {
  infer: (c) => [{ type: 'float', dims: outDims(c, tfidfSpec(c).width) }],
  evaluate: (c, x) => {
    const s = tfidfSpec(c);
    const dims = outDims(c, s.width);
    const rows = dims.length === 2 ? dims[0]! : 1;
    const len = x[0]!.dims[x[0]!.dims.length - 1] ?? 1;
    const out = new Float64Array(rows * s.width);
    for (let r = 0; r < rows; r++) countRow(s, x[0]!.data.subarray(r * len, (r + 1) * len), out, r * s.width);
    const w = (i: number) => s.weights?.[i % s.width] ?? 1;
    const y = out.map((f, i) => (s.mode === 'TF' ? f : s.mode === 'IDF' ? (f > 0 ? w(i) : 0) : f * w(i)));
    return [make('float', dims, y)];
  },
};

export const TFIDF_OPS: Record<string, OpImpl> = { TfIdfVectorizer: tfidfImpl };
