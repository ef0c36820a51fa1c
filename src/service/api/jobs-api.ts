/**
 * The one job API, whatever the topology. The HTTP routes (http/routes/jobs.ts) are written against
 * this contract only; behind it sit the single-node implementation (SQLite store, in-process
 * dispatcher: local-jobs-api.ts) and the scaled-out one (PostgreSQL store, BullMQ queue, agents:
 * queue/scaled-jobs-api.ts). Like BullMQ's Queue/Worker over their connection, a route never knows
 * which one it talks to, and the same route tests run against both (test/service/jobs-api-contract).
 *
 * Rules both share live here: who may see a job, what a job looks like on the wire, and when a job
 * has a result.
 */
import { TandemError } from '../../core/errors.js';
import type { Tenant } from '../auth/tenants.js';
import type { AnyJobType } from '../jobs/job-type.js';
import type { JobError, JobRecord, JobState } from '../store/job-store.js';

/** The authenticated caller (both topologies authenticate in an onRequest hook before a route runs). */
export type Caller = Tenant;

/** A submission whose body and params have passed the type's schema and its `parse`. */
export interface SubmitRequest {
  readonly type: AnyJobType;
  /** As sent (schema-valid); stored with the job. */
  readonly params: Record<string, unknown>;
  /** What `type.parse` made of them. */
  readonly parsed: unknown;
  readonly priority: number;
  readonly idempotencyKey: string | null;
  /** The time budget asked for (runner/deadlines.ts resolves the default and the tenant's ceiling). */
  readonly timeoutSeconds?: number | undefined;
  /** Hold the answer until the job has finished, at most this long; 0 answers once it is durable. */
  readonly waitMs: number;
}

export interface AttemptView {
  readonly attempt: number;
  readonly agent: string;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly outcome: string | null;
}

/** A job as every route answers it (the JOB_SCHEMA in http/schemas.ts). */
export interface JobView {
  readonly id: string;
  readonly type: string;
  readonly tenant: string;
  readonly state: JobState;
  readonly priority: number;
  readonly progress: number;
  readonly message: string;
  readonly params: Record<string, unknown>;
  readonly attempt: number;
  readonly jobClass: string;
  readonly memoryBytes: number;
  readonly device: string | null;
  readonly placement: string | null;
  readonly idempotencyKey: string | null;
  readonly cancelRequested: boolean;
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly waitSeconds: number | null;
  readonly runSeconds: number | null;
  readonly timeoutSeconds: number | null;
  /** Set at its first start; past it the job is stopped. */
  readonly deadline: string | null;
  readonly error: JobError | null;
  readonly hasResult: boolean;
  /** Scaled-out only: queued but held back because no live agent can fit it (the reason is the message). */
  readonly held?: boolean;
  /** Scaled-out only, on GET /v1/jobs/:id: every attempt an agent made (re-runs after a lost agent). */
  readonly attempts?: readonly AttemptView[];
}

export interface SubmitAnswer {
  /** false when an idempotency key named an existing job. */
  readonly created: boolean;
  readonly job: JobView;
  /** Present when a waited submit saw the job succeed with an inline result. */
  readonly result?: unknown;
}

export interface ListRequest {
  readonly state?: JobState | undefined;
  readonly limit: number;
  /** The `next` cursor of a previous page. */
  readonly before?: string | undefined;
  /** Admins only: a tenant name, or 'all'. */
  readonly tenant?: string | undefined;
  /** Only jobs of this type. */
  readonly type?: string | undefined;
  /** Also count the matches (up to 10,000: a count can scan the table). */
  readonly total?: boolean | undefined;
}

export interface JobList {
  readonly jobs: JobView[];
  readonly next: string | null;
  readonly total?: number;
  readonly totalExact?: boolean;
}

/** cancelled: it had not started; cancelling: it stops at its next cancellation point; final: too late. */
export type CancelOutcome = 'cancelled' | 'cancelling' | 'final';

export type JobResult =
  | { readonly id: string; readonly result: unknown; readonly stream?: undefined }
  /** A large result, streamed from its file without being parsed. */
  | { readonly id: string; readonly stream: AsyncIterable<Buffer | string> };

export interface JobsApi {
  /** The job types this deployment runs (`GET /v1/job-types`, and submit's validation). */
  types(): readonly AnyJobType[];
  /** The named type; TANDEM_ERR_UNKNOWN_JOB_TYPE (listing the known ones) otherwise. */
  jobType(name: string): AnyJobType;
  submit(caller: Caller, req: SubmitRequest): Promise<SubmitAnswer>;
  get(caller: Caller, id: string): Promise<JobView>;
  list(caller: Caller, q: ListRequest): Promise<JobList>;
  cancel(caller: Caller, id: string): Promise<{ outcome: CancelOutcome; job: JobView }>;
  result(caller: Caller, id: string): Promise<JobResult>;
  /** Chrome Trace Event JSON of the job's timeline. */
  trace(caller: Caller, id: string): Promise<object>;
  /** Stops waiters and timers (the app's onClose). */
  close(): void;
}

export const isoTime = (ms: number | null): string | null =>
  ms === null ? null : new Date(ms).toISOString();

/** The job if the caller may see it; another tenant's job is indistinguishable from a missing one. */
export function visibleJob(caller: Caller, job: JobRecord | null | undefined, id: string): JobRecord {
  if (!job || (job.tenantId !== caller.id && caller.role !== 'admin'))
    throw new TandemError('TANDEM_ERR_NOT_FOUND', `no job ${id}`, { id });
  return job;
}

/** Throws unless the job has succeeded (so it has a result): not ready while it runs, a conflict after. */
export function requireResult(job: JobRecord): void {
  if (job.state === 'queued' || job.state === 'running')
    throw new TandemError('TANDEM_ERR_NOT_READY', `job ${job.id} is ${job.state}`, {
      state: job.state,
      progress: job.progress,
    });
  if (job.state !== 'succeeded')
    throw new TandemError('TANDEM_ERR_CONFLICT', `job ${job.id} ${job.state}: it has no result`, {
      state: job.state,
      error: job.error,
    });
}

/** The wire view of a record; `live` carries what a running job has not yet written to its store. */
export function viewOf(
  j: JobRecord,
  tenantName: string,
  live?: { progress: number; message: string; placement: string | null; device: string | null },
): JobView {
  return {
    id: j.id,
    type: j.type,
    tenant: tenantName,
    state: j.state,
    priority: j.priority,
    progress: live?.progress ?? j.progress,
    message: live?.message ?? j.message,
    params: j.params,
    attempt: j.attempt,
    jobClass: j.jobClass,
    memoryBytes: j.memBytes,
    // A running job: the devices its finished tasks ran on so far (the claim's placement target is not one).
    device: live ? live.device : j.device,
    placement: live?.placement ?? j.placement,
    idempotencyKey: j.idempotencyKey,
    cancelRequested: j.cancelRequested,
    createdAt: isoTime(j.createdAt)!,
    startedAt: isoTime(j.startedAt),
    finishedAt: isoTime(j.finishedAt),
    waitSeconds: j.startedAt === null ? null : (j.startedAt - j.createdAt) / 1000,
    runSeconds: j.startedAt === null ? null : ((j.finishedAt ?? Date.now()) - j.startedAt) / 1000,
    timeoutSeconds: j.timeoutMs == null ? null : j.timeoutMs / 1000,
    deadline: isoTime(j.deadlineAt ?? null),
    error: j.error,
    hasResult: j.state === 'succeeded',
  };
}
