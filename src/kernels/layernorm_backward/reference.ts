import type { ReferenceFn } from '../common/reference.js';
import { accumulateScalar } from '../common/norm-checks.js';

export const layernormBackwardReference: ReferenceFn = (args, scalars) => {
  const op = 'layernorm_backward';
  const x = args.x!.values;
  const dy = args.dy!.values;
  const w = args.w!.values;
  const mean = args.mean!.values;
  const rstd = args.rstd!.values;
  const cols = w.length;
  const rows = x.length / cols;
  const acc = accumulateScalar(op, scalars);
  const dx = accumulateScalar(op, scalars, 'accumulateDx')
    ? args.dx!.values.slice()
    : new Float64Array(x.length);
  const dw = acc ? args.dw!.values.slice() : new Float64Array(cols);
  const db = acc ? args.db!.values.slice() : new Float64Array(cols);
  const xhat = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    let sg = 0;
    let sgx = 0;
    for (let j = 0; j < cols; j++) {
      xhat[j] = (x[base + j]! - mean[r]!) * rstd[r]!;
      const g = dy[base + j]! * w[j]!;
      sg += g;
      sgx += g * xhat[j]!;
      dw[j]! += dy[base + j]! * xhat[j]!;
      db[j]! += dy[base + j]!;
    }
    const a = sg / cols;
    const c = sgx / cols;
    for (let j = 0; j < cols; j++) {
      dx[base + j]! += rstd[r]! * (dy[base + j]! * w[j]! - a - xhat[j]! * c);
    }
  }
  return { dx, dw, db };
};
