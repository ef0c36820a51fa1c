/**
 * The parts of a running service, as types only: route plugins and the app builder depend on these,
 * not on `service.ts` (the composition root), so no import cycle runs through them. Every import here
 * is `import type`, so this module has no runtime edges at all.
 */
import type { Runtime } from '../runtime/runtime.js';
import type { TenantStore } from './auth/tenants.js';
import type { ServiceConfig } from './config.js';
import type { Lifecycle } from './device-loss.js';
import type { ServiceRuntime } from './jobs/job-type.js';
import type { JobTypeRegistry } from './jobs/registry.js';
import type { DeviceHistory } from './obs/device-history.js';
import type { JobTraceCollector } from './obs/job-trace.js';
import type { ServiceMetrics } from './obs/metrics.js';
import type { ModelRepository } from './serving/repository.js';
import type { Dispatcher } from './runner/dispatcher.js';
import type { DeviceView } from './runner/hardware-rules.js';
import type { ResultStore } from './runner/result-store.js';
import type { LoadShedder } from './runner/load-shedder.js';
import type { Submitter } from './runner/submitter.js';
import type { WalCheckpointer } from './store/checkpointer.js';
import type { Db } from './store/db.js';
import type { JobStore } from './store/job-store.js';
import type { StoreHealth } from './store/store-health.js';

/** The runtime as the service holds it: what jobs use plus observers and shutdown. */
export type ServiceRuntimeHost = ServiceRuntime &
  Pick<Runtime, 'addObserver' | 'removeObserver' | 'close'> &
  Partial<Pick<Runtime, 'onDeviceLost' | 'declareDeviceLost'>>;

export interface DeviceSnapshot extends DeviceView {
  readonly name: string;
  readonly utilization: number;
  readonly memoryUsed: number;
  readonly busySeconds: number;
}

export interface RuntimeStatus {
  readonly state: 'opening' | 'ready' | 'unavailable';
  readonly available: boolean;
  readonly reason: string | null;
}

export interface OpenedRuntime {
  readonly rt: ServiceRuntimeHost | null;
  readonly reason: string;
}

export interface ServiceParts {
  readonly config: ServiceConfig;
  readonly db: Db;
  readonly store: JobStore;
  readonly tenants: TenantStore;
  readonly registry: JobTypeRegistry;
  readonly dispatcher: Dispatcher;
  readonly submitter: Submitter;
  /** Admission that sheds load (429 + Retry-After) from the measured queueing. */
  readonly shedder: LoadShedder;
  readonly metrics: ServiceMetrics;
  readonly traces: JobTraceCollector;
  readonly results: ResultStore;
  readonly checkpointer: WalCheckpointer;
  /** ok, or degraded while store writes fail or finished jobs' outcomes wait to be committed. */
  readonly storeHealth: StoreHealth;
  /** The last ~15 minutes of device utilization, memory and queue depth (GET /v1/devices/history). */
  readonly history: DeviceHistory;
  /** The interactive lane's model repository (registered versions, their batchers). */
  readonly models: ModelRepository;
  /** The runtime once opened (null while opening, or when none could be opened). */
  runtime(): ServiceRuntimeHost | null;
  runtimeStatus(): RuntimeStatus;
  /** Serving, or draining to be relaunched after a device was lost (device-loss.ts). */
  lifecycle(): Lifecycle;
  readonly startedAt: number;
  devices(): DeviceSnapshot[];
}
