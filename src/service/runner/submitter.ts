/**
 * Group commit for submissions: requests that arrive within one event-loop turn are inserted in one
 * SQLite transaction, so one fsync makes a whole group durable before any of them is acknowledged.
 * This is what lets durable submission run at thousands per second on one disk. Each job of a group
 * succeeds or fails on its own (the store rolls back a failing row alone): one bad submission never
 * fails another tenant's.
 */
import { TandemError, asTandemError } from '../../core/errors.js';
import type { InsertClaim, InsertOutcome, JobRecord, JobStore, NewJob } from '../store/job-store.js';

/** Inserting a job already running, when the dispatcher has room for it at the group commit. */
export interface StartAtInsert {
  /** Just before the insert: where the job starts (room is now held for it), or null to queue it. */
  reserve(): InsertClaim | null;
  /** The insert committed it running: start it. */
  started(job: JobRecord): void;
  /** The room was not used (the insert failed, or an idempotency key named an existing job). */
  unreserve(): void;
}

export interface SubmitOptions {
  readonly start?: StartAtInsert;
  /** Called with the stored job once committed, before it can start or finish (a ?wait waiter). */
  readonly accepted?: (job: JobRecord) => void;
}

interface Pending {
  readonly job: NewJob;
  readonly opts: SubmitOptions | undefined;
  readonly resolve: (o: InsertOutcome) => void;
}

export class Submitter {
  private batch: Pending[] = [];
  /** Groups committed whose sync (full durability: off the loop, store/wal-sync.ts) has not ended. */
  private readonly syncingGroups = new Set<readonly Pending[]>();
  private scheduled = false;
  private closed = false;
  groups = 0;

  constructor(
    private readonly store: JobStore,
    private readonly onCreated: (job: JobRecord) => void,
    /** Seconds one group commit took (insert + fsync: the part of a submission's latency the disk sets). */
    private readonly onCommit: (seconds: number, jobs: number) => void = () => undefined,
    private readonly maxGroup = 512,
    /** A committed job's start or enqueue threw (it stays stored; a restart picks it up). */
    private readonly onHandOffError: (e: unknown, jobId: string | null) => void = () => undefined,
    /** The whole group's commit failed (disk full): every submission in it was answered with the error. */
    private readonly onCommitError: (e: unknown) => void = () => undefined,
    /**
     * The fdatasync after a committed group failed: reported here; the group is still handed off and
     * answered (it is in the database, which every reader sees; whether a power cut keeps it is what
     * failed, and /healthz says so).
     */
    private readonly onSyncError: (e: Error) => void = () => undefined,
  ) {}

  submit(job: NewJob, opts?: SubmitOptions): Promise<InsertOutcome> {
    if (this.closed)
      return Promise.resolve({
        ok: false,
        error: new TandemError('TANDEM_ERR_UNAVAILABLE', 'the service is shutting down'),
      });
    return new Promise((resolve) => {
      this.batch.push({ job, opts, resolve });
      if (this.batch.length >= this.maxGroup) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Submissions waiting for their group commit or its sync (all tenants). */
  get pending(): number {
    let n = this.batch.length;
    for (const g of this.syncingGroups) n += g.length;
    return n;
  }

  /** Submissions committed whose group waits for its sync (queued in the database, not yet here). */
  get syncing(): number {
    let n = 0;
    for (const g of this.syncingGroups) n += g.length;
    return n;
  }

  /** Jobs waiting for their group commit or its sync (counted against queue quotas). */
  pendingFor(tenantId: string): number {
    let n = 0;
    for (const p of this.batch) if (p.job.tenantId === tenantId) n++;
    for (const g of this.syncingGroups) for (const p of g) if (p.job.tenantId === tenantId) n++;
    return n;
  }

  flush(): void {
    this.scheduled = false;
    const group = this.batch;
    this.batch = [];
    if (group.length === 0) return;
    this.groups++;
    let outcomes: InsertOutcome[];
    const t0 = performance.now();
    // A job starts in its insert only with nobody ahead of it: not while an earlier group, to be
    // queued once it is on disk, still syncs.
    const claims = group.map((p) =>
      this.syncingGroups.size > 0 ? null : (p.opts?.start?.reserve() ?? null),
    );
    try {
      outcomes = this.store.insertMany(
        group.map((p) => p.job),
        Date.now(),
        claims.some((c) => c !== null) ? claims : undefined,
        'deferred',
      );
    } catch (e) {
      const error = asTandemError(e, 'TANDEM_ERR_UNAVAILABLE', 'storing the job');
      this.onCommitError(e);
      for (const p of group) {
        p.opts?.start?.unreserve();
        p.resolve({ ok: false, error });
      }
      return;
    }
    // Nothing is acknowledged, started or queued before the group is on disk.
    this.syncingGroups.add(group);
    this.store.afterDurable((syncError) => {
      this.syncingGroups.delete(group);
      this.onCommit((performance.now() - t0) / 1000, group.length);
      if (syncError) this.onSyncError(syncError);
      this.handOff(group, outcomes, claims);
    });
  }

  /**
   * Each job's hand-off on its own: a callback that throws for one job neither skips the others nor
   * leaves their requests unanswered.
   */
  private handOff(
    group: readonly Pending[],
    outcomes: readonly InsertOutcome[],
    claims: readonly (InsertClaim | null)[],
  ): void {
    outcomes.forEach((o, i) => {
      const p = group[i]!;
      try {
        if (o.ok) p.opts?.accepted?.(o.job);
        if (o.ok && o.created && claims[i]) p.opts!.start!.started(o.job);
        else p.opts?.start?.unreserve();
        if (o.ok && o.created) this.onCreated(o.job);
      } catch (e) {
        this.onHandOffError(e, o.ok ? o.job.id : null);
      } finally {
        p.resolve(o);
      }
    });
  }

  close(): void {
    this.flush();
    this.closed = true;
  }
}
