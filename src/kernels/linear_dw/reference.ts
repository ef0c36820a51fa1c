import type { ReferenceFn } from '../common/reference.js';
import { gemmValues } from '../gemm/reference.js';
import { accumulateOf } from './def.js';

export const linearDwReference: ReferenceFn = (args, scalars) => {
  const accumulate = accumulateOf('linear_dw', scalars);
  const [m, n] = args.dy!.desc.shape as [number, number];
  const k = args.x!.desc.shape[1]!;
  const dy = args.dy!.values;
  const dw = gemmValues(dy, args.x!.values, args.dw!.values, n, k, m, {
    alpha: 1,
    beta: accumulate ? 1 : 0,
    transA: true,
    transB: false,
  });
  const db = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    let s = accumulate ? args.db!.values[j]! : 0;
    for (let i = 0; i < m; i++) s += dy[i * n + j]!;
    db[j] = s;
  }
  return { dw, db };
};
