/** CPU mc_european_batch: each option's rows from the f64 reference engine, exactly as mc_european's CPU kernel. */
import { TandemError } from '../../core/errors.js';
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { mcRange, streamCount } from '../mc_common/engine.js';
import { optionRows, readTerms, TERM_COLUMNS } from './layout.js';

export const mcEuropeanBatchCpu: CpuKernel = (args) => {
  const terms = args[0]!.data as Float64Array;
  const out = args[1]!.data as Float32Array | Float64Array;
  const options = terms.length / TERM_COLUMNS;
  const totalRows = args[1]!.desc.shape[0]!;
  for (let i = 0; i < options; i++) {
    const spec = readTerms(terms, i);
    const [r0, r1] = optionRows(terms, options, totalRows, i);
    const streams = streamCount(spec);
    if (!(spec.samples >= 1) || !(r1 > r0) || r1 - r0 > streams || r1 > totalRows) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `mc_european_batch: bad terms row ${i}`, {
        op: 'mc_european_batch',
      });
    }
    const rows = r1 - r0;
    const per = Math.ceil(streams / rows);
    for (let r = 0; r < rows; r++) {
      const p = mcRange(spec, Math.min(streams, r * per), Math.min(streams, (r + 1) * per));
      const o = 3 * (r0 + r);
      out[o] = p.sum;
      out[o + 1] = p.sumSq;
      out[o + 2] = p.count;
    }
  }
};
