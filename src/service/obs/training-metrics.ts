/**
 * Prometheus metrics of training jobs: step time and steps per model, and per running job its last
 * loss and throughput (gauges removed when the job ends, so finished jobs leave no series behind).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { TrainingStepReport } from '../jobs/job-type.js';

const STEP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class TrainingMetrics {
  private readonly steps: Counter<'model'>;
  private readonly stepSeconds: Histogram<'model'>;
  private readonly loss: Gauge<'job' | 'model'>;
  private readonly throughput: Gauge<'job' | 'model' | 'unit'>;
  /** The label sets each running job has written, to remove at its end. */
  private readonly live = new Map<string, { model: string; unit: string }>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.steps = new Counter({
      name: 'tandem_train_steps_total',
      help: 'Optimizer steps taken by training jobs',
      labelNames: ['model'],
      registers,
    });
    this.stepSeconds = new Histogram({
      name: 'tandem_train_step_seconds',
      help: 'Wall time of one training step (forward, backward and update)',
      labelNames: ['model'],
      buckets: STEP_BUCKETS,
      registers,
    });
    this.loss = new Gauge({
      name: 'tandem_train_loss',
      help: "A running training job's last training loss",
      labelNames: ['job', 'model'],
      registers,
    });
    this.throughput = new Gauge({
      name: 'tandem_train_throughput',
      help: "A running training job's last step throughput (per second, of the unit label: tokens or images)",
      labelNames: ['job', 'model', 'unit'],
      registers,
    });
  }

  step(jobId: string, s: TrainingStepReport): void {
    this.steps.inc({ model: s.model });
    this.stepSeconds.observe({ model: s.model }, s.seconds);
    if (Number.isFinite(s.loss)) this.loss.set({ job: jobId, model: s.model }, s.loss);
    this.throughput.set({ job: jobId, model: s.model, unit: s.unit }, s.throughput);
    this.live.set(jobId, { model: s.model, unit: s.unit });
  }

  /** The job ended (any state): its per-job series go. */
  ended(jobId: string): void {
    const l = this.live.get(jobId);
    if (!l) return;
    this.live.delete(jobId);
    this.loss.remove({ job: jobId, model: l.model });
    this.throughput.remove({ job: jobId, model: l.model, unit: l.unit });
  }
}
