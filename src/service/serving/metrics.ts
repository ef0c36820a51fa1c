/**
 * Prometheus metrics of the interactive lane, per model and version, on the service's registry:
 * requests (by tenant) and failures (by code), queue and compute time, batch sizes, and the queue
 * depth now (read when scraped).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const TIME_BUCKETS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5,
];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export interface ModelDepth {
  readonly name: string;
  readonly version: number;
  readonly queued: number;
  readonly inFlight: number;
}

/** One model version's label sets, made once: a request's metrics then allocate no label objects. */
interface VersionLabels {
  readonly model: { readonly model: string; readonly version: string };
  /** Per tenant: its label set and the requests answered since the last scrape. */
  readonly tenants: Map<string, { readonly labels: Record<string, string>; pending: number }>;
}

export class ServingMetrics {
  private readonly requests: Counter<'model' | 'version' | 'tenant'>;
  private readonly failures: Counter<'model' | 'version' | 'code'>;
  private readonly queueSeconds: Histogram<'model' | 'version'>;
  private readonly computeSeconds: Histogram<'model' | 'version'>;
  private readonly batchSize: Histogram<'model' | 'version'>;
  private readonly labels = new Map<string, Map<number, VersionLabels>>();

  constructor(registry: Registry, depths: () => Iterable<ModelDepth>) {
    const registers = [registry];
    const labels = this.labels;
    this.requests = new Counter({
      name: 'tandem_model_requests_total',
      help: 'Inference requests answered through the interactive lane',
      labelNames: ['model', 'version', 'tenant'],
      registers,
      // Counted in plain numbers per request and added here when scraped: prom-client hashes the label
      // set on every inc, which was a visible share of the lane's per-request CPU.
      collect() {
        for (const versions of labels.values())
          for (const v of versions.values())
            for (const t of v.tenants.values())
              if (t.pending > 0) {
                this.inc(t.labels, t.pending);
                t.pending = 0;
              }
      },
    });
    this.failures = new Counter({
      name: 'tandem_model_failures_total',
      help: 'Inference requests answered with an error, by code',
      labelNames: ['model', 'version', 'code'],
      registers,
    });
    this.queueSeconds = new Histogram({
      name: 'tandem_model_queue_seconds',
      help: "Time from a request's arrival until its batch started",
      labelNames: ['model', 'version'],
      buckets: TIME_BUCKETS,
      registers,
    });
    this.computeSeconds = new Histogram({
      name: 'tandem_model_compute_seconds',
      help: 'Time one batch ran (model.runBatch)',
      labelNames: ['model', 'version'],
      buckets: TIME_BUCKETS,
      registers,
    });
    this.batchSize = new Histogram({
      name: 'tandem_model_batch_size',
      help: 'Requests per batch run',
      labelNames: ['model', 'version'],
      buckets: BATCH_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'tandem_model_queue_depth',
      help: 'Requests waiting (state=queued) and in running batches (state=running), per model version',
      labelNames: ['model', 'version', 'state'],
      registers,
      collect() {
        this.reset();
        for (const d of depths()) {
          this.set({ model: d.name, version: String(d.version), state: 'queued' }, d.queued);
          this.set({ model: d.name, version: String(d.version), state: 'running' }, d.inFlight);
        }
      },
    });
  }

  /** One answered request (code: null when it succeeded). */
  request(model: string, version: number, tenant: string, queueUs: number, code: string | null): void {
    const v = this.labelsOf(model, version);
    let t = v.tenants.get(tenant);
    if (t === undefined) {
      t = { labels: { ...v.model, tenant }, pending: 0 };
      v.tenants.set(tenant, t);
    }
    t.pending++;
    if (code !== null) this.failures.inc({ ...v.model, code });
    if (queueUs > 0) this.queueSeconds.observe(v.model, queueUs / 1e6);
  }

  batch(model: string, version: number, size: number, computeUs: number): void {
    const v = this.labelsOf(model, version);
    this.batchSize.observe(v.model, size);
    this.computeSeconds.observe(v.model, computeUs / 1e6);
  }

  private labelsOf(model: string, version: number): VersionLabels {
    let versions = this.labels.get(model);
    if (versions === undefined) this.labels.set(model, (versions = new Map()));
    let v = versions.get(version);
    if (v === undefined)
      versions.set(version, (v = { model: { model, version: String(version) }, tenants: new Map() }));
    return v;
  }
}
