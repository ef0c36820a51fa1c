/**
 * Composition root of the service: opens the database, the runtime (or takes one), the job registry,
 * dispatcher and metrics, and builds the Fastify app. `createService` is what tests use (no socket);
 * `server.ts` adds listening, the first admin key and signals.
 */
import { join } from 'node:path';
import { TenantStore, type CreatedKey } from './auth/tenants.js';
import type { ServiceConfig } from './config.js';
import { JobTypeRegistry } from './jobs/registry.js';
import { registerBuiltinJobTypes } from './jobs/builtin.js';
import { DeviceActivity } from './obs/device-activity.js';
import { DeviceHistory } from './obs/device-history.js';
import { JobTraceCollector } from './obs/job-trace.js';
import { ServiceMetrics } from './obs/metrics.js';
import { Dispatcher } from './runner/dispatcher.js';
import { ResultStore } from './runner/result-store.js';
import { Submitter } from './runner/submitter.js';
import { LoadShedder } from './runner/load-shedder.js';
import { WalCheckpointer } from './store/checkpointer.js';
import { openDatabase } from './store/db.js';
import { JobStore } from './store/job-store.js';
import { StoreHealth } from './store/store-health.js';
import { buildApp } from './http/app.js';
import { DeviceLossHandler } from './device-loss.js';
import { tenantDeviceUsage } from './runner/tenant-share.js';
import { HungKernelWatchdog } from './runner/hung-kernel-watchdog.js';
import { builtinModelFactories } from './serving/factories.js';
import { ModelRepository } from './serving/repository.js';
import type { FastifyInstance } from 'fastify';
import type {
  DeviceSnapshot,
  OpenedRuntime,
  RuntimeStatus,
  ServiceParts,
  ServiceRuntimeHost,
} from './parts.js';

export type {
  DeviceSnapshot,
  OpenedRuntime,
  RuntimeStatus,
  ServiceParts,
  ServiceRuntimeHost,
} from './parts.js';

/** How long close() waits for running jobs to stop after a kernel hung (otherwise the dispatcher's 5 s). */
const HUNG_STOP_WAIT_MS = 1000;

export interface Service extends ServiceParts {
  readonly app: FastifyInstance;
  /** Set on the first start only: the admin key, to print once. */
  readonly bootstrapKey: CreatedKey | null;
  readonly recovered: { requeued: number; queued: number };
  /**
   * With `restartOnDeviceLoss`: resolves with why once a lost device's faulted jobs are committed; the
   * owner then closes the service and exits for a relaunch. Never resolves otherwise.
   */
  readonly restartRequested: Promise<string>;
  /**
   * A GPU kernel of this process never ended (the hung-kernel watchdog gave its device up): close()
   * then leaves the runtime open, and the process's own exit would wait on that device, so its owner
   * ends it another way (under the supervisor: SIGKILL, asked for with the relaunch).
   */
  readonly kernelHung: boolean;
  close(): Promise<void>;
}

export interface CreateServiceOptions {
  /**
   * A runtime, null for none (API-only), or a runtime still opening: the service serves (submit, list,
   * health) at once and starts dispatching when it is ready, so a restart is not held up by device
   * start-up and calibration.
   */
  readonly runtime: ServiceRuntimeHost | null | Promise<OpenedRuntime>;
  readonly runtimeReason?: string;
  readonly registry?: JobTypeRegistry;
  /** Close the runtime on service close (true when the service opened it). */
  readonly ownsRuntime?: boolean;
  /**
   * Under a supervisor that relaunches the process: drain and request a restart when a device is lost
   * for the rest of the process. Otherwise the loss is logged and the other devices serve on.
   */
  readonly restartOnDeviceLoss?: boolean;
}

export async function createService(config: ServiceConfig, opts: CreateServiceOptions): Promise<Service> {
  const db = openDatabase(config.dataDir, config.durability);
  const store = new JobStore(db);
  const tenants = new TenantStore(db, config.quotas);
  const bootstrapKey = tenants.bootstrapAdmin();
  const registry = opts.registry ?? new JobTypeRegistry();
  if (!opts.registry) await registerBuiltinJobTypes(registry, undefined, { dataDir: config.dataDir });
  let rt: ServiceRuntimeHost | null = null;
  let status: RuntimeStatus = { state: 'opening', available: false, reason: 'the runtime is opening' };
  const activity = new DeviceActivity();
  const traces = new JobTraceCollector(join(config.dataDir, 'traces'));
  const results = new ResultStore(join(config.dataDir, 'results'), config.inlineResultBytes);

  let dispatcherRef: Dispatcher | null = null;
  const storeHealth = new StoreHealth();
  const log = (level: 'info' | 'warn' | 'error', msg: string): void => {
    if (config.logLevel === 'silent') return;
    if (level === 'info' && !['info', 'debug'].includes(config.logLevel)) return;
    process.stderr.write(`[tandem ${level}] ${msg}\n`);
  };
  // WAL checkpoints on a thread of their own: a commit on the event loop never copies the WAL back.
  const checkpointer = new WalCheckpointer(db, { log });
  const loss = new DeviceLossHandler({
    restart: opts.restartOnDeviceLoss === true,
    isRunning: (id) => dispatcherRef?.live(id) !== undefined,
    log,
  });
  const devices = (): DeviceSnapshot[] => {
    if (!rt) return [];
    const usage = rt.memoryUsage();
    // A lost device is left out, so placement (hardware rules) picks among the devices that still work.
    const usable = loss.anyLost ? rt.devices.filter((d) => !loss.isLost(d.info.id)) : rt.devices;
    return usable.map((d) => {
      const u = usage.find((m) => m.node === d.node.name);
      return {
        id: d.info.id,
        kind: d.info.kind,
        name: d.info.name,
        memoryBytes: d.info.memoryBytes,
        peakFlops: d.info.peakFlops,
        software: d.info.details['software'] === true,
        utilization: activity.utilization(d.info.id),
        memoryUsed: u?.usedBytes ?? 0,
        busySeconds: activity.busySeconds(d.info.id),
      };
    });
  };
  const metrics = new ServiceMetrics({
    devices: () => devices().map((d) => ({ id: d.id, memoryTotal: d.memoryBytes, memoryUsed: d.memoryUsed })),
    queueDepth: () => dispatcherRef?.queue.depthByTenantAndPriority() ?? new Map(),
    running: () => dispatcherRef?.runningByTenant() ?? new Map(),
    tenantName: (id) => tenants.get(id)?.name ?? id,
    activity,
    tenantDeviceUsage: () => tenantDeviceUsage(rt),
  });
  const watchdog = new HungKernelWatchdog({
    deviceKind: (id) => rt?.devices.find((d) => d.info.id === id)?.info.kind,
    declareLost: (id, reason) => rt?.declareDeviceLost?.(id, reason) ?? false,
    charge: (tenant, device, seconds) =>
      metrics.tenantDeviceSeconds.inc({ tenant: tenants.get(tenant)?.name ?? tenant, device }, seconds),
  });
  const dispatcher = new Dispatcher({
    // Admission closes while draining: the dispatcher starts a job only while fewer than
    // maxRunningJobs run, and reads the figure on every pump.
    config: {
      ...config,
      get maxRunningJobs(): number {
        return loss.draining ? 0 : config.maxRunningJobs;
      },
    },
    store,
    tenants,
    registry,
    rt: () => rt,
    devices,
    traces,
    results,
    metrics,
    log,
    health: storeHealth,
    onOverdue: (job) => watchdog.overdue(job),
  });
  dispatcherRef = dispatcher;
  const submitter = new Submitter(
    store,
    (job) => {
      metrics.jobsSubmitted.inc({ type: job.type });
      dispatcher.enqueue(job);
    },
    (seconds) => {
      metrics.submitCommit.observe(seconds);
      storeHealth.succeeded();
    },
    undefined,
    (e, id) =>
      log(
        'error',
        `handing job ${id ?? '?'} to the dispatcher: ${e instanceof Error ? e.message : String(e)}`,
      ),
    (e) => storeHealth.failed('storing submissions', e),
    (e) => storeHealth.failed('syncing submissions to disk', e),
  );
  const shedder = new LoadShedder(config.shed, {
    backlog: () => dispatcher.queue.size + submitter.pending,
    backlogFor: (id) => dispatcher.queue.countForTenant(id) + submitter.pendingFor(id),
    pendingCommit: () => submitter.pending,
    activeTenants: function* () {
      for (const [id, byPriority] of dispatcher.queue.depthByTenantAndPriority())
        if (byPriority.size > 0) yield id;
    },
    weightOf: (id) => tenants.get(id)?.weight ?? 1,
  });
  dispatcher.onJobFinished(() => shedder.jobFinished());
  shedder.start();
  const recovered = dispatcher.recover();
  const history = new DeviceHistory(config.historyIntervalMs);
  history.start(() => ({
    devices: devices().map((d) => ({ ...d, inflight: activity.inflight(d.id) })),
    queued: dispatcher.queue.size,
    running: dispatcher.runningCount,
  }));
  const models = new ModelRepository({
    dataDir: config.dataDir,
    factories: builtinModelFactories(),
    runtime: () => rt,
    findJob: (id) => store.get(id),
    registry: metrics.registry,
    log,
    spinUs: config.laneSpinUs,
  });
  const parts: ServiceParts = {
    config,
    db,
    store,
    tenants,
    registry,
    dispatcher,
    submitter,
    shedder,
    metrics,
    traces,
    results,
    checkpointer,
    storeHealth,
    history,
    models,
    runtime: () => rt,
    runtimeStatus: () => status,
    lifecycle: () => loss.lifecycle(),
    startedAt: Date.now(),
    devices,
  };
  const app = await buildApp(parts);
  let closed = false;
  const attach = (opened: OpenedRuntime): void => {
    if (closed) {
      if (opened.rt && opts.ownsRuntime) void opened.rt.close();
      return;
    }
    const held = opened.rt;
    rt = held;
    if (held) for (const o of [activity, metrics, traces, watchdog]) held.addObserver(o);
    // Runs inside the device's fault path, before its tasks fail: the drain (and its observer, which
    // collects the jobs those failures belong to) is in place before the dispatcher sees any of them.
    held?.onDeviceLost?.((lost) => {
      if (opts.restartOnDeviceLoss) held.addObserver(loss);
      loss.deviceLost(lost);
    });
    status =
      rt && rt.devices.length > 0
        ? { state: 'ready', available: true, reason: opened.reason || null }
        : { state: 'unavailable', available: false, reason: opened.reason || 'no runtime' };
    if (!rt || rt.devices.length === 0) log('warn', `runtime: ${status.reason ?? ''}`);
    dispatcher.resume();
  };
  const opening = opts.runtime instanceof Promise ? opts.runtime : null;
  if (opening)
    opening.then(attach, (e: unknown) =>
      attach({ rt: null, reason: e instanceof Error ? e.message : String(e) }),
    );
  else
    attach({
      rt: opts.runtime as ServiceRuntimeHost | null,
      reason: opts.runtimeReason ?? (opts.runtime ? '' : 'no runtime'),
    });
  return {
    ...parts,
    app,
    bootstrapKey,
    recovered,
    restartRequested: loss.restartRequested,
    get kernelHung() {
      return watchdog.anyHung;
    },
    async close() {
      if (closed) return;
      closed = true;
      history.stop();
      submitter.close();
      shedder.stop();
      await app.close();
      // After a hung kernel, jobs with work queued on that GPU never end in this process: waiting the
      // usual 5 s for them only delays the relaunch (every running job is re-queued by the next process).
      await dispatcher.stop(watchdog.anyHung ? HUNG_STOP_WAIT_MS : undefined);
      if (opening) await opening.catch(() => undefined);
      const held = rt as ServiceRuntimeHost | null;
      if (held) for (const o of [activity, metrics, traces, loss, watchdog]) held.removeObserver(o);
      // A kernel that never ends would hold a runtime close forever (it waits for the device): the
      // process exit that follows releases it (the driver tears the context down).
      if (held && opts.ownsRuntime && watchdog.anyHung)
        log('warn', 'not closing the runtime: a GPU kernel is hung');
      else if (held && opts.ownsRuntime) await held.close();
      await checkpointer.close();
      db.close();
    },
  };
}
