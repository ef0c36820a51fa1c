/** The norm ops of the deep-learning layer (issue 15); see docs/deep-learning-ops.md. */
import { dropoutCpu } from '../dropout/cpu.js';
import { dropoutDef } from '../dropout/def.js';
import { dropoutReference } from '../dropout/reference.js';
import { dropoutBackwardCpu } from '../dropout_backward/cpu.js';
import { dropoutBackwardDef } from '../dropout_backward/def.js';
import { dropoutBackwardReference } from '../dropout_backward/reference.js';
import { embeddingCpu } from '../embedding/cpu.js';
import { embeddingDef } from '../embedding/def.js';
import { embeddingReference } from '../embedding/reference.js';
import { embeddingBackwardCpu } from '../embedding_backward/cpu.js';
import { embeddingBackwardDef } from '../embedding_backward/def.js';
import { embeddingBackwardReference } from '../embedding_backward/reference.js';
import { layernormCpu } from '../layernorm/cpu.js';
import { layernormDef } from '../layernorm/def.js';
import { layernormReference } from '../layernorm/reference.js';
import { layernormBackwardCpu } from '../layernorm_backward/cpu.js';
import { layernormBackwardDef } from '../layernorm_backward/def.js';
import { layernormBackwardReference } from '../layernorm_backward/reference.js';
import { residualLayernormCpu } from '../residual_layernorm/cpu.js';
import { residualLayernormDef } from '../residual_layernorm/def.js';
import { residualLayernormReference } from '../residual_layernorm/reference.js';
import { softmaxXentCpu } from '../softmax_xent/cpu.js';
import { softmaxXentDef } from '../softmax_xent/def.js';
import { softmaxXentReference } from '../softmax_xent/reference.js';
import { dropoutCuda } from '../dropout/cuda.js';
import { dropoutBackwardCuda } from '../dropout_backward/cuda.js';
import { embeddingCuda } from '../embedding/cuda.js';
import { embeddingBackwardCuda } from '../embedding_backward/cuda.js';
import { layernormCuda } from '../layernorm/cuda.js';
import { layernormBackwardCuda } from '../layernorm_backward/cuda.js';
import { residualLayernormCuda } from '../residual_layernorm/cuda.js';
import { softmaxXentCuda, softmaxXentScaledCuda } from '../softmax_xent/cuda.js';
import {
  softmaxXentScaledCpu,
  softmaxXentScaledDef,
  softmaxXentScaledReference,
} from '../softmax_xent/scaled.js';
import { layernormWebGpu } from '../layernorm/webgpu.js';
import { softmaxXentWebGpu } from '../softmax_xent/webgpu.js';
import type { KernelImplEntry } from '../kernel.js';
import { normCases } from './norm-cases.js';
import type { OpGroup } from './op-group.js';

const cpu = (op: string, impl: unknown): KernelImplEntry => ({ op, backend: 'cpu', impl });
const webgpu = (op: string, impl: unknown): KernelImplEntry => ({ op, backend: 'webgpu', impl });
const cuda = (op: string, impl: unknown): KernelImplEntry => ({ op, backend: 'cuda', impl });

export const normGroup: OpGroup = {
  name: 'norm',
  defs: [
    layernormDef,
    residualLayernormDef,
    layernormBackwardDef,
    embeddingDef,
    embeddingBackwardDef,
    softmaxXentDef,
    softmaxXentScaledDef,
    dropoutDef,
    dropoutBackwardDef,
  ],
  impls: [
    cpu('layernorm', layernormCpu),
    cpu('residual_layernorm', residualLayernormCpu),
    cpu('layernorm_backward', layernormBackwardCpu),
    cpu('embedding', embeddingCpu),
    cpu('embedding_backward', embeddingBackwardCpu),
    cpu('softmax_xent', softmaxXentCpu),
    cpu('softmax_xent_scaled', softmaxXentScaledCpu),
    cpu('dropout', dropoutCpu),
    cpu('dropout_backward', dropoutBackwardCpu),
    cuda('layernorm', layernormCuda),
    cuda('residual_layernorm', residualLayernormCuda),
    cuda('layernorm_backward', layernormBackwardCuda),
    cuda('embedding', embeddingCuda),
    cuda('embedding_backward', embeddingBackwardCuda),
    cuda('softmax_xent', softmaxXentCuda),
    cuda('softmax_xent_scaled', softmaxXentScaledCuda),
    cuda('dropout', dropoutCuda),
    cuda('dropout_backward', dropoutBackwardCuda),
    webgpu('layernorm', layernormWebGpu),
    webgpu('softmax_xent', softmaxXentWebGpu),
  ],
  references: {
    layernorm: layernormReference,
    residual_layernorm: residualLayernormReference,
    layernorm_backward: layernormBackwardReference,
    embedding: embeddingReference,
    embedding_backward: embeddingBackwardReference,
    softmax_xent: softmaxXentReference,
    softmax_xent_scaled: softmaxXentScaledReference,
    dropout: dropoutReference,
    dropout_backward: dropoutBackwardReference,
  },
  cases: normCases,
};
