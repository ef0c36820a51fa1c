import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, actGrad } from '../activation/ops.js';
import { gemmValues } from '../gemm/reference.js';

export const linearDxActReference: ReferenceFn = (args, scalars) => {
  const grad = actGrad(enumScalar('linear_dx_act', scalars, 'act', ACT_OPS));
  const [m, n] = args.dy!.desc.shape as [number, number];
  const k = args.w!.desc.shape[1]!;
  const t = gemmValues(args.dy!.values, args.w!.values, null, m, k, n, {
    alpha: 1,
    beta: 0,
    transA: false,
    transB: false,
  });
  const pre = args.pre!.values;
  return { dx: t.map((v, i) => grad(pre[i]!) * v) };
};
