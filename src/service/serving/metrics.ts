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

export class ServingMetrics {
  private readonly requests: Counter<'model' | 'version' | 'tenant'>;
  private readonly failures: Counter<'model' | 'version' | 'code'>;
  private readonly queueSeconds: Histogram<'model' | 'version'>;
  private readonly computeSeconds: Histogram<'model' | 'version'>;
  private readonly batchSize: Histogram<'model' | 'version'>;

  constructor(registry: Registry, depths: () => Iterable<ModelDepth>) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'tandem_model_requests_total',
      help: 'Inference requests answered through the interactive lane',
      labelNames: ['model', 'version', 'tenant'],
      registers,
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
    const v = String(version);
    this.requests.inc({ model, version: v, tenant });
    if (code !== null) this.failures.inc({ model, version: v, code });
    if (queueUs > 0) this.queueSeconds.observe({ model, version: v }, queueUs / 1e6);
  }

  batch(model: string, version: number, size: number, computeUs: number): void {
    const v = String(version);
    this.batchSize.observe({ model, version: v }, size);
    this.computeSeconds.observe({ model, version: v }, computeUs / 1e6);
  }
}
