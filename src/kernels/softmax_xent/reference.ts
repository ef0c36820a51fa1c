import type { ReferenceFn } from '../common/reference.js';
import { xentParams } from './def.js';

export const softmaxXentReference: ReferenceFn = (args, scalars) => {
  const p = xentParams(args.logits!.desc, scalars);
  const x = args.logits!.values;
  const t = args.targets!.values;
  const losses = new Float64Array(p.rows);
  const grad = new Float64Array(x.length);
  for (let i = 0; i < p.rows; i++) {
    const base = i * p.padded;
    let m = -Infinity;
    for (let j = 0; j < p.vocab; j++) m = Math.max(m, x[base + j]!);
    let s = 0;
    for (let j = 0; j < p.vocab; j++) s += Math.exp(x[base + j]! - m);
    const lse = m + Math.log(s);
    const target = t[i]!;
    const valid = target >= 0 && target < p.vocab;
    losses[i] = target === -1 ? 0 : valid ? lse - x[base + target]! : NaN;
    for (let j = 0; j < p.vocab; j++) {
      const g = Math.exp(x[base + j]! - lse) - (j === target ? 1 : 0);
      grad[base + j] = target === -1 ? 0 : valid ? g * p.gradScale : NaN;
    }
  }
  const out: Record<string, Float64Array> = { losses };
  if (p.backward) out.logits = grad;
  return out;
};
