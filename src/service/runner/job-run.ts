/**
 * One job's run: its in-memory state while it runs (progress, stop requests, deadline), the context its
 * type's `run` sees, and the outcome that run ends with. Committing that outcome is the dispatcher's
 * (dispatcher.ts, turn-commit.ts); nothing here waits on the store.
 */
import { asTandemError, isTandemError, type TandemError } from '../../core/errors.js';
import type { TenantStore } from '../auth/tenants.js';
import type { ServiceConfig } from '../config.js';
import type { AnyJobType, JobContext, Placement, ServiceRuntime } from '../jobs/job-type.js';
import type { JobEvents, JobTraceCollector } from '../obs/job-trace.js';
import type { TrainingMetrics } from '../obs/training-metrics.js';
import type { FinishOutcome, JobRecord, JobStore } from '../store/job-store.js';
import type { StoreHealth } from '../store/store-health.js';
import { tenantRuntime } from './tenant-share.js';

export interface RunningJob {
  readonly job: JobRecord;
  readonly placement: Placement;
  readonly done: Promise<void>;
  progress: number;
  message: string;
  /** What the database holds (written at most every PROGRESS_WRITE_MS), for the final record. */
  savedProgress: number;
  savedMessage: string;
  /** Made when the job first looks at its signal: an AbortSignal costs several µs a job. */
  abort: AbortController | null;
  /** A cancel or shutdown asked the job to stop (its signal is, or will be made, aborted). */
  stopRequested: boolean;
  cancelRequested: boolean;
  /** Why the job was asked to stop (the abort's reason): a cancel, its deadline, or a shutdown. */
  stopReason: TandemError | null;
  /** Epoch ms; the deadline sweep stops the job past it. */
  readonly deadlineAt: number;
  deadlineHit: boolean;
  /** Failed by the sweep while its run had not returned: its slot is freed, its late outcome dropped. */
  abandoned: boolean;
  /** Its run returned; its outcome waits for the next turn's commit (the sweep leaves it alone). */
  finishing: boolean;
}

export function newRunningJob(job: JobRecord, placement: Placement, deadlineAt: number): RunningJob {
  return {
    job,
    placement,
    progress: 0,
    message: '',
    savedProgress: 0,
    savedMessage: '',
    abort: null,
    stopRequested: false,
    cancelRequested: false,
    stopReason: null,
    deadlineAt,
    deadlineHit: false,
    abandoned: false,
    finishing: false,
    done: Promise.resolve(),
  };
}

/** Asks a running job to stop; the first reason stands (a cancel stays a cancel past the deadline). */
export function stopJob(r: RunningJob, reason: TandemError): void {
  if (r.stopRequested) return;
  r.stopRequested = true;
  r.stopReason = reason;
  r.abort?.abort(reason);
}

export interface JobRunDeps {
  readonly config: Pick<ServiceConfig, 'fairShare'>;
  readonly store: Pick<JobStore, 'setProgress'>;
  readonly tenants: Pick<TenantStore, 'get'>;
  readonly rt: () => ServiceRuntime | null;
  readonly traces: Pick<JobTraceCollector, 'begin'>;
  readonly health: Pick<StoreHealth, 'failed'>;
  /** Where training jobs' steps go (the service's metrics); absent: nowhere. */
  readonly metrics?: { readonly training: Pick<TrainingMetrics, 'step' | 'ended'> };
}

const PROGRESS_WRITE_MS = 250;

/** Runs the job's type and returns the outcome to commit (never throws) and its trace events. */
export async function runJob(
  r: RunningJob,
  type: AnyJobType,
  params: unknown,
  d: JobRunDeps,
): Promise<{ outcome: FinishOutcome; ev: JobEvents }> {
  const ev = d.traces.begin(r.job.id);
  const ctx = jobContext(r, params, ev, d);
  try {
    await Promise.resolve(); // run never starts synchronously inside the dispatcher's turn
    const result = await type.run(ctx);
    return { outcome: { state: 'succeeded', result }, ev };
  } catch (e) {
    if (isTandemError(r.stopReason, 'TANDEM_ERR_DEADLINE_EXCEEDED')) {
      // Stopped by its deadline: whatever it threw on the way out, that is why it failed.
      return { outcome: { state: 'failed', error: r.stopReason.toJSON() }, ev };
    }
    const err = asTandemError(e, 'TANDEM_ERR_INTERNAL', `job ${r.job.type}`);
    const cancelled = r.stopRequested || isTandemError(e, 'TANDEM_ERR_CANCELLED');
    return { outcome: { state: cancelled ? 'cancelled' : 'failed', error: err.toJSON() }, ev };
  } finally {
    d.metrics?.training.ended(r.job.id);
  }
}

function jobContext(r: RunningJob, params: unknown, ev: JobEvents, d: JobRunDeps): JobContext<unknown> {
  const { job } = r;
  // The first write comes PROGRESS_WRITE_MS into the run, not at the first call: a short job's progress
  // is never worth a commit of its own (one per job was 4 % of the main thread at 5x overload), and
  // `live()` answers from memory meanwhile.
  let lastWrite = Date.now();
  return {
    jobId: job.id,
    tenantId: job.tenantId,
    attempt: job.attempt,
    params,
    get signal(): AbortSignal {
      if (!r.abort) {
        r.abort = new AbortController();
        if (r.stopRequested) r.abort.abort(r.stopReason ?? undefined);
      }
      return r.abort.signal;
    },
    get aborted(): boolean {
      return r.stopRequested;
    },
    // Its tasks are charged to its tenant: devices are shared by weight at the task level too.
    rt: tenantRuntime(d.rt(), job.tenantId, d.tenants.get(job.tenantId)?.weight ?? 1, d.config.fairShare),
    placement: r.placement,
    tags: { job: job.id, tenant: job.tenantId },
    progress: (fraction, message = '') => {
      r.progress = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
      r.message = message.slice(0, 200);
      const now = Date.now();
      if (now - lastWrite >= PROGRESS_WRITE_MS) {
        lastWrite = now;
        try {
          if (d.store.setProgress(job.id, job.attempt, r.progress, r.message)) {
            r.savedProgress = r.progress;
            r.savedMessage = r.message;
          }
        } catch (e) {
          d.health.failed(`saving the progress of job ${job.id}`, e); // advisory: the job goes on
        }
      }
    },
    span: (name, startUs, endUs, args) => {
      ev.spans.push({ name, startUs, endUs, ...(args ? { args } : {}) });
    },
    ...(d.metrics ? { trainingStep: (s) => d.metrics?.training.step(job.id, s) } : {}),
  };
}
