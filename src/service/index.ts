/**
 * `tandem/service`: the job service as a library. `startServer` is what `tandem serve` runs (listening,
 * the first admin key, signals); `createService` builds the same service without a socket (embedding,
 * tests through Fastify's `inject()`); job types are defined with `defineJobType` and registered on a
 * `JobTypeRegistry` passed in as `registry`.
 */
export { createService, type CreateServiceOptions, type Service } from './service.js';
export type {
  DeviceSnapshot,
  OpenedRuntime,
  RuntimeStatus,
  ServiceParts,
  ServiceRuntimeHost,
} from './parts.js';
export { openRuntime, startServer, type RunningServer, type StartOptions } from './server.js';
export {
  DEFAULT_CONFIG,
  loadServiceConfig,
  parseHardwareRules,
  type ConfigOverrides,
  type HardwareRule,
  type ServiceConfig,
  type TenantQuotaDefaults,
} from './config.js';
export {
  defineJobType,
  type AnyJobType,
  type JobContext,
  type JobType,
  type JsonSchema,
  type Placement,
  type ServiceRuntime,
} from './jobs/job-type.js';
export { JobTypeRegistry } from './jobs/registry.js';
export { registerBuiltinJobTypes } from './jobs/builtin.js';
