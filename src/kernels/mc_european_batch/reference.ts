/**
 * Float64 reference of mc_european_batch, written independently of the kernels' row loop: each option
 * priced over all its streams at once by the engine, as (sum, sum of squares, count). Tests compare the
 * kernels' rows, summed per option, with it.
 */
import { mcRange, streamCount, type McPartial } from '../mc_common/engine.js';
import { readTerms, TERM_COLUMNS } from './layout.js';

export function mcEuropeanBatchReference(terms: Float64Array): McPartial[] {
  const out: McPartial[] = [];
  for (let i = 0; i < terms.length / TERM_COLUMNS; i++) {
    const spec = readTerms(terms, i);
    out.push(mcRange(spec, 0, streamCount(spec)));
  }
  return out;
}
