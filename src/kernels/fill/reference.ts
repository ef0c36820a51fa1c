import type { ReferenceFn } from '../common/reference.js';
import { fillValue } from './def.js';

export const fillReference: ReferenceFn = (args, scalars) => ({
  y: new Float64Array(args.y!.values.length).fill(fillValue(scalars, args.y!.desc.dtype)),
});
