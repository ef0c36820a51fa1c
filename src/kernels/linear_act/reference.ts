import type { ReferenceFn } from '../common/reference.js';
import { enumScalar } from '../common/scalars.js';
import { ACT_OPS, actFn } from '../activation/ops.js';
import { linearValues } from '../linear/reference.js';

export const linearActReference: ReferenceFn = (args, scalars) => {
  const f = actFn(enumScalar('linear_act', scalars, 'act', ACT_OPS));
  const [m, k] = args.x!.desc.shape as [number, number];
  const n = args.w!.desc.shape[0]!;
  const pre = linearValues(args.x!.values, args.w!.values, args.b!.values, m, n, k);
  return { pre, y: pre.map(f) };
};
