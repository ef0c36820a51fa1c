/** The linear ops of the deep-learning layer (issue 15); see docs/deep-learning-ops.md. */
import { activationDef } from '../activation/def.js';
import { activationCpu } from '../activation/cpu.js';
import { activationReference } from '../activation/reference.js';
import { activationBackwardDef } from '../activation_backward/def.js';
import { activationBackwardCpu } from '../activation_backward/cpu.js';
import { activationBackwardReference } from '../activation_backward/reference.js';
import { linearDef } from '../linear/def.js';
import { linearCpu } from '../linear/cpu.js';
import { linearReference } from '../linear/reference.js';
import { linearActDef } from '../linear_act/def.js';
import { linearActCpu } from '../linear_act/cpu.js';
import { linearActReference } from '../linear_act/reference.js';
import { linearDxActDef } from '../linear_dx_act/def.js';
import { linearDxActCpu } from '../linear_dx_act/cpu.js';
import { linearDxActReference } from '../linear_dx_act/reference.js';
import { linearDwDef } from '../linear_dw/def.js';
import { linearDwCpu } from '../linear_dw/cpu.js';
import { linearDwReference } from '../linear_dw/reference.js';
import { activationCuda } from '../activation/cuda.js';
import { activationBackwardCuda } from '../activation_backward/cuda.js';
import { linearCuda } from '../linear/cuda.js';
import { linearActCuda } from '../linear_act/cuda.js';
import { linearDxActCuda } from '../linear_dx_act/cuda.js';
import { linearDwCuda } from '../linear_dw/cuda.js';
import { activationWebGpu } from '../activation/webgpu.js';
import { activationBackwardWebGpu } from '../activation_backward/webgpu.js';
import { linearActWebGpu, linearWebGpu } from '../linear/webgpu.js';
import { linearDxActWebGpu } from '../linear_dx_act/webgpu.js';
import { linearDwWebGpu } from '../linear_dw/webgpu.js';
import { linearGroupCases } from './linear-cases.js';
import type { OpGroup } from './op-group.js';

export const linearGroup: OpGroup = {
  name: 'linear',
  defs: [linearDef, linearActDef, linearDxActDef, linearDwDef, activationDef, activationBackwardDef],
  impls: [
    { op: 'linear', backend: 'cpu', impl: linearCpu },
    { op: 'linear_act', backend: 'cpu', impl: linearActCpu },
    { op: 'linear_dx_act', backend: 'cpu', impl: linearDxActCpu },
    { op: 'linear_dw', backend: 'cpu', impl: linearDwCpu },
    { op: 'activation', backend: 'cpu', impl: activationCpu },
    { op: 'activation_backward', backend: 'cpu', impl: activationBackwardCpu },
    { op: 'linear', backend: 'cuda', impl: linearCuda },
    { op: 'linear_act', backend: 'cuda', impl: linearActCuda },
    { op: 'linear_dx_act', backend: 'cuda', impl: linearDxActCuda },
    { op: 'linear_dw', backend: 'cuda', impl: linearDwCuda },
    { op: 'activation', backend: 'cuda', impl: activationCuda },
    { op: 'activation_backward', backend: 'cuda', impl: activationBackwardCuda },
    { op: 'linear', backend: 'webgpu', impl: linearWebGpu },
    { op: 'linear_act', backend: 'webgpu', impl: linearActWebGpu },
    { op: 'linear_dx_act', backend: 'webgpu', impl: linearDxActWebGpu },
    { op: 'linear_dw', backend: 'webgpu', impl: linearDwWebGpu },
    { op: 'activation', backend: 'webgpu', impl: activationWebGpu },
    { op: 'activation_backward', backend: 'webgpu', impl: activationBackwardWebGpu },
  ],
  references: {
    linear: linearReference,
    linear_act: linearActReference,
    linear_dx_act: linearDxActReference,
    linear_dw: linearDwReference,
    activation: activationReference,
    activation_backward: activationBackwardReference,
  },
  cases: linearGroupCases,
};
