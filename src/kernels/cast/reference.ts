import type { ReferenceFn } from '../common/reference.js';
import { castValue } from './convert.js';

export const castReference: ReferenceFn = (args) => {
  const dst = args.y!.desc.dtype;
  return { y: args.x!.values.map((v) => castValue(dst, v)) };
};
