import type { Cost } from '../kernel.js';

/** Nothing to compute or move: any time a noop task takes is the runtime's own overhead. */
export function noopCost(): Cost {
  return { flops: 0, bytes: 0 };
}
