import { makeMcDef } from '../mc_common/def.js';

/** european option payoff partial sums over a range of Philox streams (see mc_common/def.ts for the contract). */
export const mcEuropeanDef = makeMcDef('mc_european');
