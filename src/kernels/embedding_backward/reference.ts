import type { ReferenceFn } from '../common/reference.js';
import { accumulateScalar } from '../common/norm-checks.js';

export const embeddingBackwardReference: ReferenceFn = (args, scalars) => {
  const ids = args.ids!.values;
  const dy = args.dy!.values;
  const [vocab, cols] = args.dwte!.desc.shape as [number, number];
  const steps = args.ids!.desc.shape[1]!;
  const acc = accumulateScalar('embedding_backward', scalars);
  const dwte = acc ? args.dwte!.values.slice() : new Float64Array(args.dwte!.values.length);
  const dwpe = acc ? args.dwpe!.values.slice() : new Float64Array(args.dwpe!.values.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const t = i % steps;
    for (let c = 0; c < cols; c++) {
      const g = dy[i * cols + c]!;
      if (id >= 0 && id < vocab) dwte[id * cols + c]! += g;
      dwpe[t * cols + c]! += g;
    }
  }
  return { dwte, dwpe };
};
