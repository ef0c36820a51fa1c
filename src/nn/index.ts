/**
 * `tandem/nn`: deep learning on the runtime — autograd over runtime tasks, layers, models (MLP, CNN,
 * GPT-2), optimizers (AdamW with f32 master weights, SGD), mixed precision, checkpoints, data loaders
 * and the training loop the CLI and the service use. Guide: docs/deep-learning.md.
 */
export { Nn, PRECISIONS, type NnOptions, type Precision } from './context.js';
export { Var } from './var.js';
export { Module } from './modules/module.js';
export { Conv2d, LayerNorm, Linear, type Conv2dOptions, type LinearOptions } from './modules/layers.js';
export { linear, mlp, type Activation } from './ops/linear.js';
export { activation, add, dropout, flatten, reshape } from './ops/elementwise.js';
export { layerNorm, residualLayerNorm } from './ops/norm.js';
export { embedding } from './ops/embedding.js';
export { causalSelfAttention } from './ops/attention.js';
export { crossEntropy } from './ops/loss.js';
export { conv2d, pool2d, type ConvOptions, type PoolOptions } from './ops/conv.js';
export { Mlp, Cnn, type Classifier, type MlpConfig } from './models/classifiers.js';
export { Gpt, GPT_PRESETS, gptConfig, gptFlopsPerToken, type GptConfig } from './models/gpt.js';
export { Optimizer, type StepOptions } from './optim/optimizer.js';
export { AdamW, type AdamWOptions } from './optim/adamw.js';
export { Sgd, type SgdOptions } from './optim/sgd.js';
export { cosineWithWarmup, type CosineSchedule } from './optim/schedule.js';
export { StaticStep } from './static-step.js';
export { StaticTraining } from './train-static.js';
export { TokenLoader, readTokenFile, type TokenBatch, type TokenLoaderOptions } from './data/tokens.js';
export { brownCorpusBytes, brownCorpusTokens, untagBrown, GPT2_EOT } from './data/corpus.js';
export { epochOrder, imageBatch, type ImageSet } from './data/images.js';
export {
  FASHION_MNIST_DIR,
  loadFashionMnist,
  readIdx,
  type FashionMnist,
  type IdxArray,
  type LabeledImages,
} from './data/idx.js';
export {
  batches,
  batchesPerEpoch,
  shuffledOrder,
  type BatchOptions,
  type ImageBatch,
} from './data/batches.js';
export { evaluateClassifier, evaluateGpt, type ClassifierScore } from './evaluate.js';
export {
  Trainer,
  buildModel,
  type ModelName,
  type StepReport,
  type TrainData,
  type TrainSpec,
} from './train.js';
export { GradScaler, type GradScalerOptions, type GradScalerState } from './grad-scaler.js';
export { DeviceGradScaler } from './device-grad-scaler.js';
export {
  loadSafetensors,
  saveSafetensors,
  hostArrayOf,
  type LoadedTensor,
  type TensorToSave,
} from './safetensors.js';
export {
  checkpointFile,
  latestCheckpoint,
  loadCheckpoint,
  loadParameters,
  saveCheckpoint,
  saveParameters,
} from './checkpoint.js';
export {
  classifierMemoryPlan,
  gptMemoryPlan,
  gptParameterCount,
  planBytes,
  requireFits,
  type MemoryPlan,
} from './memory.js';
export {
  buildReplicas,
  DATA_PARALLEL_MODES,
  PARALLEL_MODES,
  PipelineTrainer,
  pickGpus,
  planBuckets,
  planParallel,
  Replicas,
  runReplicas,
  simulateSchedule,
  theoreticalBubble,
  trainDataParallel,
  trainParallel,
  trainPipeline,
  Zero1,
  type DataParallelMode,
  type ParallelMode,
  type ParallelPlan,
  type PassRecord,
  type PipelineOptions,
  type ScheduleKind,
} from './parallel/index.js';
