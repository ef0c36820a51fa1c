/**
 * Job deadlines: every job has a time budget (`timeoutSeconds` in the request, else its type's default,
 * else the service's), never above its tenant's maximum. The budget starts at the job's first start, not
 * at submit: time spent queued behind other tenants (or shed by admission) is the service's doing, not the
 * job's, and a submit-time clock would fail jobs that never ran whenever the service is busy. The
 * deadline is written with that first claim (`jobs.deadline_at`) and kept when a restart re-queues the
 * job, so a relaunch never hands a job a fresh budget: a job that hung a GPU or crashed the server is not
 * given its whole time again each time it comes back.
 *
 * Jobs of absurd size (an `option` of 2^40 paths, `md` of 10^9 steps) are not refused at submit: what
 * they cost depends on where they land (2^40 paths is seconds on an H200, hours on one CPU core), which is
 * known only at placement. They are stopped at their deadline instead, at the next task or step boundary.
 */
import { TandemError } from '../../core/errors.js';
import type { AnyJobType } from '../jobs/job-type.js';
import type { JobRecord } from '../store/job-store.js';

/** The budget of a job whose request gave none, in ms: its type's default within the tenant's ceiling. */
export function defaultTimeoutMs(type: AnyJobType | undefined, serviceDefaultSeconds: number): number {
  return Math.round((type?.defaultTimeoutSeconds ?? serviceDefaultSeconds) * 1000);
}

/**
 * The budget (ms) a submit gets: the requested timeoutSeconds (400 TANDEM_ERR_LIMIT above the tenant's
 * maximum), else the type's default lowered to that maximum.
 */
export function resolveTimeoutMs(
  requestedSeconds: number | undefined,
  type: AnyJobType,
  tenant: { readonly name: string; readonly maxTimeoutSeconds: number },
  serviceDefaultSeconds: number,
): number {
  const maxMs = tenant.maxTimeoutSeconds * 1000;
  if (requestedSeconds === undefined) return Math.min(defaultTimeoutMs(type, serviceDefaultSeconds), maxMs);
  if (!Number.isFinite(requestedSeconds) || requestedSeconds <= 0)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'timeoutSeconds must be a positive number of seconds',
      {
        timeoutSeconds: requestedSeconds,
      },
    );
  if (requestedSeconds > tenant.maxTimeoutSeconds)
    throw new TandemError(
      'TANDEM_ERR_LIMIT',
      `timeoutSeconds ${requestedSeconds} is above the tenant's maximum of ${tenant.maxTimeoutSeconds} s`,
      { timeoutSeconds: requestedSeconds, maxTimeoutSeconds: tenant.maxTimeoutSeconds, tenant: tenant.name },
    );
  return Math.max(1, Math.round(requestedSeconds * 1000));
}

/** The deadline a job gets if it starts now (a job from before deadlines has no stored budget). */
export function deadlineIfStartedAt(
  job: Pick<JobRecord, 'timeoutMs'>,
  type: AnyJobType | undefined,
  serviceDefaultSeconds: number,
  now: number,
): number {
  return now + (job.timeoutMs ?? defaultTimeoutMs(type, serviceDefaultSeconds));
}

/** The failure a job past its deadline commits. */
export function deadlineExceeded(
  job: Pick<JobRecord, 'timeoutMs' | 'deadlineAt' | 'startedAt'>,
  now: number,
  note?: string,
  extra: Record<string, unknown> = {},
): TandemError {
  const budget = job.timeoutMs ?? null;
  const what = budget === null ? 'its deadline' : `its deadline (timeoutSeconds ${budget / 1000})`;
  return new TandemError(
    'TANDEM_ERR_DEADLINE_EXCEEDED',
    `the job ran past ${what}${note ? `; ${note}` : ''}`,
    {
      timeoutSeconds: budget === null ? null : budget / 1000,
      deadline: job.deadlineAt ? new Date(job.deadlineAt).toISOString() : null,
      overdueSeconds: job.deadlineAt ? Math.max(0, now - job.deadlineAt) / 1000 : null,
      ...(note ? { note } : {}),
      ...extra,
    },
  );
}
