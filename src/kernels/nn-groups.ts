/** Every deep-learning op group (issue 15), each in src/kernels/nn/<group>.ts. */
import { attentionGroup } from './nn/attention.js';
import { convGroup } from './nn/conv.js';
import { linearGroup } from './nn/linear.js';
import { normGroup } from './nn/norm.js';
import type { OpGroup } from './nn/op-group.js';
import { optimGroup } from './nn/optim.js';
import { kvcacheGroup } from './nn/kvcache.js';

export const NN_GROUPS: readonly OpGroup[] = [
  linearGroup,
  normGroup,
  attentionGroup,
  optimGroup,
  convGroup,
  kvcacheGroup,
];
