/**
 * The terms table of mc_european_batch: one f64 row of TERM_COLUMNS per option (f64 so that a seed up to
 * 2^53 and a path count up to 2^40 are exact), and where each option's rows of partial sums start in
 * the output. An option gets exactly the rows a one-task mc_european price of it gets (mcRows of its
 * stream count), so its partial sums, and its price, do not depend on the other options of its batch.
 */
import type { McSpec } from '../mc_common/engine.js';
import { streamCount } from '../mc_common/engine.js';
import { mcRows } from '../mc_common/def.js';

/** Column order of a terms row (the CPU and CUDA kernels index the table with these). */
export const TERM = {
  spot: 0,
  strike: 1,
  mu: 2,
  sigma: 3,
  call: 4,
  antithetic: 5,
  samples: 6,
  seed: 7,
  firstRow: 8,
} as const;
export const TERM_COLUMNS = 9;

/** Writes option `i`'s row of the terms table; returns the row after its last output row. */
export function writeTerms(terms: Float64Array, i: number, spec: McSpec, firstRow: number): number {
  const o = i * TERM_COLUMNS;
  terms[o + TERM.spot] = spec.spot;
  terms[o + TERM.strike] = spec.strike;
  terms[o + TERM.mu] = spec.mu;
  terms[o + TERM.sigma] = spec.sigma;
  terms[o + TERM.call] = spec.call ? 1 : 0;
  terms[o + TERM.antithetic] = spec.antithetic ? 1 : 0;
  terms[o + TERM.samples] = spec.samples;
  terms[o + TERM.seed] = spec.seed;
  terms[o + TERM.firstRow] = firstRow;
  return firstRow + mcRows(streamCount(spec));
}

/** Reads option `i` of a terms table back as the spec the single-option engine prices. */
export function readTerms(terms: ArrayLike<number>, i: number): McSpec {
  const o = i * TERM_COLUMNS;
  return {
    kind: 'european',
    call: terms[o + TERM.call] !== 0,
    spot: terms[o + TERM.spot]!,
    strike: terms[o + TERM.strike]!,
    mu: terms[o + TERM.mu]!,
    sigma: terms[o + TERM.sigma]!,
    steps: 1,
    antithetic: terms[o + TERM.antithetic] !== 0,
    samples: terms[o + TERM.samples]!,
    seed: terms[o + TERM.seed]!,
    discount: 1,
  };
}

/** Rows option `i` owns: [firstRow_i, firstRow_{i+1}), the last option's up to the table's end. */
export function optionRows(
  terms: ArrayLike<number>,
  options: number,
  totalRows: number,
  i: number,
): [number, number] {
  const a = terms[i * TERM_COLUMNS + TERM.firstRow]!;
  const b = i + 1 < options ? terms[(i + 1) * TERM_COLUMNS + TERM.firstRow]! : totalRows;
  return [a, b];
}
