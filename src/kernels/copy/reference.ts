import type { ReferenceFn } from '../common/reference.js';

export const copyReference: ReferenceFn = (args) => ({ y: Float64Array.from(args.x!.values) });
