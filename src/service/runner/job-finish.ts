/**
 * A finished job's outcome as the store commits it: its result stored (inline or as a file), the device
 * its tasks ran on, its trace handed to the writer, and the record exactly as the commit writes it (so
 * the listeners, a ?wait answer, need not read it back). Then, once committed, the metrics it counts.
 */
import type { ChromeTrace } from '../../obs/trace.js';
import { buildJobTrace, type JobEvents, type JobTraceCollector } from '../obs/job-trace.js';
import type { ServiceMetrics } from '../obs/metrics.js';
import type { FinishOutcome, JobRecord } from '../store/job-store.js';
import type { ResultStore } from './result-store.js';
import type { RunningJob } from './job-run.js';

/** An outcome waiting for the dispatcher's next turn commit. */
export interface PendingFinish {
  /** The job as claimed (its attempt fences the commit). */
  readonly job: JobRecord;
  readonly outcome: FinishOutcome;
  readonly ev: JobEvents | undefined;
  /** Its run's state (progress, cancel) when it ran; absent for a job failed before it could run. */
  readonly r?: RunningJob;
  /**
   * The job's admitted room is released only when this lands: no new job starts while none could be
   * stored (back-pressure on a full disk).
   */
  readonly holdsRoom: boolean;
  /** Called once the outcome is committed or handed to the retrier (the watchdog gives up a device). */
  readonly after?: () => void;
}

export interface PreparedFinish {
  /** What `JobStore.finish` writes. */
  readonly outcome: FinishOutcome;
  /** The committed record, built in memory. */
  readonly record: JobRecord;
  readonly finishedAt: number;
}

/**
 * Stores the result (a large one as a file: this can throw on a full disk, before anything is
 * committed) and builds what the commit writes.
 */
export function prepareFinish(
  d: { readonly results: Pick<ResultStore, 'store'>; readonly traces: Pick<JobTraceCollector, 'write'> },
  p: Pick<PendingFinish, 'job' | 'ev' | 'r'>,
  outcome: FinishOutcome,
): PreparedFinish {
  const { job, ev, r } = p;
  const finishedAt = Date.now();
  let o = outcome;
  if (o.state === 'succeeded') {
    const stored = d.results.store(job.id, o.result);
    o = { ...o, result: stored.inline, resultFile: stored.file };
  }
  const placement = r?.placement.reason;
  // Where its tasks ran (none: null) replaces where it was meant to go (a kind, or 'auto').
  if (ev) o = { ...o, device: ev.devices.size ? [...ev.devices].sort().join(',') : null };
  // The record exactly as finish() writes it (the columns it sets, the rest as claimed).
  const base: JobRecord = {
    ...job,
    state: o.state,
    finishedAt,
    error: o.error ?? null,
    result: o.result ?? null,
    resultFile: o.resultFile ?? null,
    progress: o.state === 'succeeded' ? 1 : (r?.savedProgress ?? job.progress),
    message: r?.savedMessage ?? job.message,
    cancelRequested: job.cancelRequested || (r?.cancelRequested ?? false),
    device: o.device === undefined ? job.device : o.device,
  };
  // The trace is built when its batch is written (or first read), off this path.
  const times = { resultStoredAt: Date.now(), ...(placement ? { placement } : {}) };
  const trace = (): ChromeTrace => buildJobTrace(base, ev, times, finishedAt);
  const traceFile = d.traces.write(job.id, trace);
  return { outcome: { ...o, traceFile }, record: { ...base, traceFile }, finishedAt };
}

/** The metrics of a committed outcome. */
export function countFinished(metrics: ServiceMetrics, f: PreparedFinish): void {
  const { record: job, outcome: o } = f;
  metrics.jobsFinished.inc({ type: job.type, state: o.state });
  if (o.error?.code === 'TANDEM_ERR_DEADLINE_EXCEEDED')
    metrics.deadlinesExceeded.inc({ type: job.type, hung: String('hungDevices' in o.error.details) });
  if (job.startedAt !== null)
    metrics.jobRun.observe({ type: job.type, state: o.state }, (f.finishedAt - job.startedAt) / 1000);
}
