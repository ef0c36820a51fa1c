import type { ReferenceFn } from '../common/reference.js';
import { imageNormalizeParams, normalizeInto } from './params.js';

export const imageNormalizeReference: ReferenceFn = (args, scalars) => {
  const x = args.x!;
  const [n, h, w] = x.desc.shape as [number, number, number, number];
  const y = new Float64Array(x.values.length);
  normalizeInto(imageNormalizeParams('image_normalize', scalars), x.values, y, n, h * w);
  return { y };
};
