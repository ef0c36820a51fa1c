/** Forward-only GPT with a KV cache, and sampling (issue 16); see docs/generation.md. */
export {
  GptInference,
  type CachedRun,
  type GptInferenceOptions,
  type Head,
  type HeadOutput,
  type TopK,
} from './gpt-inference.js';
export { DEFAULT_PLAN_LIMITS, bucketUp, type ScorePlanLimits } from './score-plans.js';
export { KvCache, type KvCacheOptions } from './kv-cache.js';
export { Sampler, argmax, checkSampling, topEntries, type SamplingOptions } from './sampling.js';
export type { InferenceRuntime, RunPlace } from './scope.js';
