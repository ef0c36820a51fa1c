/** What the dispatcher is built from (its own file: the dispatcher's parts import it without a cycle). */
import type { ServiceConfig } from '../config.js';
import type { TenantStore } from '../auth/tenants.js';
import type { ServiceRuntime } from '../jobs/job-type.js';
import type { JobTypeRegistry } from '../jobs/registry.js';
import type { ServiceMetrics } from '../obs/metrics.js';
import type { JobTraceCollector } from '../obs/job-trace.js';
import type { JobRecord, JobStore } from '../store/job-store.js';
import type { StoreHealth } from '../store/store-health.js';
import type { DeviceView } from './hardware-rules.js';
import type { ResultStore } from './result-store.js';

export interface DispatcherDeps {
  readonly config: ServiceConfig;
  readonly store: JobStore;
  readonly tenants: TenantStore;
  readonly registry: JobTypeRegistry;
  readonly rt: () => ServiceRuntime | null;
  readonly devices: () => readonly DeviceView[];
  readonly traces: JobTraceCollector;
  readonly results: ResultStore;
  readonly metrics: ServiceMetrics;
  readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void;
  /** Told of every failed and successful store write on the dispatch path (shown by /healthz). */
  readonly health: StoreHealth;
  /**
   * A job still running `deadlineGraceMs` after its deadline (it did not stop at its cancellation
   * point: a task that does not end, e.g. a hung GPU kernel). The answer adds a note to its failure and
   * `after` runs once that failure is committed (the service's watchdog gives up the device there).
   */
  readonly onOverdue?: (job: JobRecord) => OverdueVerdict | null;
}

export interface OverdueVerdict {
  readonly note: string;
  readonly details: Readonly<Record<string, unknown>>;
  readonly after?: () => void;
}
