import type { ReferenceFn } from '../common/reference.js';

export const embeddingReference: ReferenceFn = (args) => {
  const ids = args.ids!.values;
  const wte = args.wte!.values;
  const wpe = args.wpe!.values;
  const [vocab, cols] = args.wte!.desc.shape as [number, number];
  const steps = args.ids!.desc.shape[1]!;
  const y = new Float64Array(ids.length * cols);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const t = i % steps;
    for (let c = 0; c < cols; c++) {
      y[i * cols + c] = id >= 0 && id < vocab ? wte[id * cols + c]! + wpe[t * cols + c]! : NaN;
    }
  }
  return { y };
};
