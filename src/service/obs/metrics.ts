/**
 * Prometheus metrics (prom-client, one registry per service instance). Counters are fed by runtime
 * observers and job transitions; gauges that describe "now" (utilization, memory, queue depth) are
 * computed when scraped, so they cost nothing between scrapes.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Observer, TaskEvent, TransferEvent } from '../../obs/observer.js';
import type { ShareUsage } from '../../runtime/shares.js';
import type { DeviceActivity } from './device-activity.js';
import { TrainingMetrics } from './training-metrics.js';

export interface MetricsSources {
  readonly devices: () => readonly { id: string; memoryTotal: number; memoryUsed: number }[];
  readonly queueDepth: () => ReadonlyMap<string, ReadonlyMap<number, number>>;
  readonly running: () => ReadonlyMap<string, number>;
  readonly tenantName: (id: string) => string;
  readonly activity: DeviceActivity;
  /** Device time per tenant from the runtime's share groups (named by tenant id); absent: none. */
  readonly tenantDeviceUsage?: () => readonly ShareUsage[];
}

const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800];
const RUN_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 7200];

export class ServiceMetrics implements Observer {
  readonly registry = new Registry();
  private readonly tasks: Counter<'device' | 'op' | 'status'>;
  private readonly taskSeconds: Counter<'device'>;
  private readonly flops: Counter<'device'>;
  private readonly transferBytes: Counter<'from' | 'to'>;
  private readonly transfers: Counter<'from' | 'to'>;
  readonly jobsSubmitted: Counter<'type'>;
  readonly jobsFinished: Counter<'type' | 'state'>;
  readonly jobWait: Histogram<'type'>;
  readonly jobRun: Histogram<'type' | 'state'>;
  readonly httpErrors: Counter<'code'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly submitCommit: Histogram;
  /** Device seconds each tenant's tasks held, a hung kernel's included (charged when it is given up). */
  readonly tenantDeviceSeconds: Counter<'tenant' | 'device'>;
  /** Jobs failed past their deadline; hung = their kernel had to be stopped by giving up the device. */
  readonly deadlinesExceeded: Counter<'type' | 'hung'>;
  /** Training jobs' steps, loss and throughput. */
  readonly training: TrainingMetrics;

  constructor(src: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'tandem_process_' });
    this.training = new TrainingMetrics(this.registry);
    this.tasks = new Counter({
      name: 'tandem_tasks_total',
      help: 'Runtime tasks finished',
      labelNames: ['device', 'op', 'status'],
      registers,
    });
    this.tenantDeviceSeconds = new Counter({
      name: 'tandem_tenant_device_seconds_total',
      help: "Seconds of device time of each tenant's tasks (a hung kernel's time is charged when it is stopped)",
      labelNames: ['tenant', 'device'],
      registers,
    });
    this.deadlinesExceeded = new Counter({
      name: 'tandem_jobs_deadline_exceeded_total',
      help: 'Jobs failed past their deadline (hung="true": a GPU kernel that did not end; its device was given up)',
      labelNames: ['type', 'hung'],
      registers,
    });
    this.taskSeconds = new Counter({
      name: 'tandem_device_busy_seconds_total',
      help: 'Seconds of task execution per device',
      labelNames: ['device'],
      registers,
    });
    this.flops = new Counter({
      name: 'tandem_task_flops_total',
      help: 'Floating-point operations of finished tasks',
      labelNames: ['device'],
      registers,
    });
    this.transferBytes = new Counter({
      name: 'tandem_transfer_bytes_total',
      help: 'Bytes copied between memory nodes',
      labelNames: ['from', 'to'],
      registers,
    });
    this.transfers = new Counter({
      name: 'tandem_transfers_total',
      help: 'Copies between memory nodes',
      labelNames: ['from', 'to'],
      registers,
    });
    this.jobsSubmitted = new Counter({
      name: 'tandem_jobs_submitted_total',
      help: 'Jobs accepted (durably stored)',
      labelNames: ['type'],
      registers,
    });
    this.jobsFinished = new Counter({
      name: 'tandem_jobs_finished_total',
      help: 'Jobs that reached a final state',
      labelNames: ['type', 'state'],
      registers,
    });
    this.jobWait = new Histogram({
      name: 'tandem_job_wait_seconds',
      help: 'Time from submission to start',
      labelNames: ['type'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.jobRun = new Histogram({
      name: 'tandem_job_run_seconds',
      help: 'Time from start to final state',
      labelNames: ['type', 'state'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'tandem_http_request_duration_seconds',
      help: 'Time from request received to response sent, inside the service',
      labelNames: ['method', 'route'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5],
      registers,
    });
    this.submitCommit = new Histogram({
      name: 'tandem_submit_commit_seconds',
      help: 'Duration of one group commit of submissions (SQLite insert + fsync under full durability)',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1],
      registers,
    });
    this.httpErrors = new Counter({
      name: 'tandem_http_errors_total',
      help: 'Error responses by code',
      labelNames: ['code'],
      registers,
    });
    new Gauge({
      name: 'tandem_device_utilization_ratio',
      help: 'Fraction of the last 5 s a device was running a task',
      labelNames: ['device'],
      registers,
      collect() {
        this.reset();
        for (const d of src.devices()) this.set({ device: d.id }, src.activity.utilization(d.id));
      },
    });
    new Gauge({
      name: 'tandem_device_memory_used_bytes',
      help: 'Device memory held by the runtime',
      labelNames: ['device'],
      registers,
      collect() {
        this.reset();
        for (const d of src.devices()) this.set({ device: d.id }, d.memoryUsed);
      },
    });
    new Gauge({
      name: 'tandem_device_memory_total_bytes',
      help: 'Device memory capacity',
      labelNames: ['device'],
      registers,
      collect() {
        this.reset();
        for (const d of src.devices()) this.set({ device: d.id }, d.memoryTotal);
      },
    });
    new Gauge({
      name: 'tandem_queue_depth',
      help: 'Queued jobs by tenant and priority',
      labelNames: ['tenant', 'priority'],
      registers,
      collect() {
        this.reset();
        for (const [tenant, byPrio] of src.queueDepth())
          for (const [prio, n] of byPrio)
            this.set({ tenant: src.tenantName(tenant), priority: String(prio) }, n);
      },
    });
    // Device-time shares (the runtime shares devices by these, by weight): tandem_tenant_device_seconds_total
    // counts what each tenant's tasks used (the watchdog's task events); this, what each waits for and holds.
    new Gauge({
      name: 'tandem_tenant_tasks',
      help: "Each tenant's runtime tasks waiting for a device (state=waiting) and on one (state=running)",
      labelNames: ['tenant', 'state'],
      registers,
      collect() {
        this.reset();
        for (const u of src.tenantDeviceUsage?.() ?? []) {
          this.set({ tenant: src.tenantName(u.share), state: 'waiting' }, u.pending);
          this.set({ tenant: src.tenantName(u.share), state: 'running' }, u.running);
        }
      },
    });
    new Gauge({
      name: 'tandem_jobs_running',
      help: 'Running jobs by tenant',
      labelNames: ['tenant'],
      registers,
      collect() {
        this.reset();
        for (const [tenant, n] of src.running()) this.set({ tenant: src.tenantName(tenant) }, n);
      },
    });
  }

  onTaskEnd(e: TaskEvent): void {
    this.tasks.inc({ device: e.deviceId, op: e.op, status: e.ok ? 'ok' : 'failed' });
    this.taskSeconds.inc({ device: e.deviceId }, Math.max(0, e.endUs - e.startUs) / 1e6);
    if (e.ok && e.flops > 0) this.flops.inc({ device: e.deviceId }, e.flops);
  }

  onTransfer(e: TransferEvent): void {
    this.transferBytes.inc({ from: e.from, to: e.to }, e.bytes);
    this.transfers.inc({ from: e.from, to: e.to });
  }
}
