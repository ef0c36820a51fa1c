/** The attention ops of the deep-learning layer (issue 15); see docs/deep-learning-ops.md. */
import type { OpGroup } from './op-group.js';

export const attentionGroup: OpGroup = {
  name: 'attention',
  defs: [],
  impls: [],
  references: {},
  cases: () => [],
};
