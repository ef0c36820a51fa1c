/**
 * Admission that sheds load before latency collapses. The service measures its own queueing — how fast
 * jobs drain (finishes per second while there is a backlog), how many wait (queued + waiting for the
 * group commit), how late its event loop runs (a 10 ms timer probe), how many submissions are in
 * progress — and refuses a submission with 429 and a Retry-After computed from the backlog and the drain
 * rate, instead of accepting everything and answering late.
 *
 * The queued-jobs budget is drain rate × target wait (clamped to [minBacklog, maxBacklog]), split between
 * the tenants that have jobs queued by weight. A tenant is refused for the backlog only when the whole
 * queue is over the budget *and* the tenant is over its own share, so a tenant under its share is never
 * refused because of another tenant's flood (the queue can then reach at most twice the budget, which
 * bounds memory). Under event-loop pressure a tenant is refused only if it submits faster than its share
 * of the drain rate and already has two seconds of that share queued: the flood pays, not the others.
 */
import type { LoadShedConfig } from '../config.js';

/** What the shedder reads from the queue and the submitter (all in memory, no database). */
export interface QueueSignals {
  /** Jobs queued for dispatch plus submissions waiting for the next group commit. */
  backlog(): number;
  /** One tenant's share of backlog(). */
  backlogFor(tenantId: string): number;
  /** Submissions waiting for the next group commit. */
  pendingCommit(): number;
  /** Tenants with queued jobs (their weights set the shares). */
  activeTenants(): Iterable<string>;
  weightOf(tenantId: string): number;
}

export type ShedReason = 'backlog' | 'event-loop' | 'in-flight';

export interface Refusal {
  readonly reason: ShedReason;
  readonly message: string;
  readonly retryAfterSeconds: number;
  readonly details: Readonly<Record<string, number | string>>;
}

export interface LoadSnapshot {
  readonly shedding: boolean;
  readonly loopDelayMs: number;
  readonly drainPerSecond: number;
  readonly backlog: number;
  readonly backlogBudget: number;
  /** backlog / drain rate; null before any job has finished. */
  readonly expectedWaitSeconds: number | null;
  readonly inFlight: number;
  readonly refused: number;
}

const PROBE_MS = 10;
const WINDOW_MS = 250;
/** Smoothing of the loop-delay samples: a lone stall (a GC) does not trip it, a sustained one does. */
const LOOP_ALPHA = 0.2;
const DRAIN_ALPHA = 0.2;
const ARRIVAL_ALPHA = 0.5;
const MAX_RETRY_SECONDS = 60;
/**
 * Under loop pressure a tenant keeps this many seconds of its share of the drain rate queued (at least
 * MIN_QUEUED_TO_SHED jobs) before it can be refused: shedding never starves the dispatcher.
 */
const KEEP_QUEUED_SECONDS = 2;
const MIN_QUEUED_TO_SHED = 32;
/**
 * Nor is a tenant refused for loop pressure below this many submissions a second: a few requests a
 * second do not make the loop late (a job's own host work may, and shedding would not help).
 */
const MIN_RATE_TO_SHED = 20;

interface Arrivals {
  count: number;
  perSecond: number;
}

export class LoadShedder {
  private loopDelay = 0;
  private drain = 0;
  private finishedInWindow = 0;
  private windowStart: number;
  private lastProbe: number;
  private timer: NodeJS.Timeout | null = null;
  private inFlightNow = 0;
  /** Admitted submissions not yet handed to the submitter (body being read, validated): backlog too. */
  private arriving = 0;
  private readonly arrivingByTenant = new Map<string, number>();
  private refusedTotal = 0;
  private lastRefusalAt = -Infinity;
  private readonly arrivals = new Map<string, Arrivals>();
  /** Weights of the tenants with queued jobs, refreshed each window (a newcomer is added per call). */
  private active = new Map<string, number>();
  private activeWeight = 0;

  constructor(
    private readonly cfg: LoadShedConfig,
    private readonly q: QueueSignals,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.windowStart = this.lastProbe = now();
  }

  get enabled(): boolean {
    return this.cfg.enabled;
  }

  /** Starts the event-loop probe (a 10 ms timer that does not keep the process alive). */
  start(): void {
    // Measured even when shedding is off, so /healthz shows the load either way.
    if (this.timer) return;
    this.lastProbe = this.now();
    this.timer = setInterval(() => {
      const t = this.now();
      this.sampleLoopDelay(Math.max(0, t - this.lastProbe - PROBE_MS));
      this.lastProbe = t;
      this.tick();
    }, PROBE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** A job (or `count` jobs, counted elsewhere: a cluster's store) reached a final state: the drain rate's numerator. */
  jobFinished(count = 1): void {
    this.finishedInWindow += count;
  }

  /** One probe sample: how late the timer fired, ms. */
  sampleLoopDelay(lateMs: number): void {
    this.loopDelay += LOOP_ALPHA * (lateMs - this.loopDelay);
  }

  /** Closes a measurement window once WINDOW_MS have passed: drain rate, arrival rates, shares. */
  tick(): void {
    const t = this.now();
    const elapsed = t - this.windowStart;
    if (elapsed < WINDOW_MS) return;
    const seconds = elapsed / 1000;
    const sample = this.finishedInWindow / seconds;
    // With a backlog at least as deep as what the window drained, the dispatcher never ran dry, so
    // finishes per second is the capacity. With less, it is only the demand, a lower bound, that may
    // raise the estimate but not lower it (else shedding that keeps the queue short would read its own
    // short queue as a slow service, shed more, and spiral down).
    if (this.q.backlog() >= Math.max(1, this.finishedInWindow))
      this.drain = this.drain === 0 ? sample : this.drain + DRAIN_ALPHA * (sample - this.drain);
    else this.drain = Math.max(this.drain, sample);
    this.finishedInWindow = 0;
    this.windowStart = t;
    for (const [tenant, a] of this.arrivals) {
      a.perSecond += ARRIVAL_ALPHA * (a.count / seconds - a.perSecond);
      a.count = 0;
      if (a.perSecond < 0.01) this.arrivals.delete(tenant);
    }
    this.active = new Map();
    this.activeWeight = 0;
    for (const tenant of this.q.activeTenants()) {
      const w = this.weight(tenant);
      this.active.set(tenant, w);
      this.activeWeight += w;
    }
  }

  /** The queued-jobs budget: what drains within the target wait, within [minBacklog, maxBacklog]. */
  budget(): number {
    const { minBacklog, maxBacklog, targetWaitSeconds } = this.cfg;
    return Math.min(maxBacklog, Math.max(minBacklog, Math.floor(this.drain * targetWaitSeconds)));
  }

  /**
   * Whether a submission from `tenantId` is accepted now: null, or why not and when to retry. Counts
   * the arrival either way (a tenant that keeps flooding stays over its share of the drain rate).
   */
  admit(tenantId: string): Refusal | null {
    if (!this.cfg.enabled) return null;
    const a = this.arrivals.get(tenantId);
    if (a) a.count++;
    else this.arrivals.set(tenantId, { count: 1, perSecond: 0 });
    const refusal = this.decide(tenantId);
    if (refusal) {
      this.refusedTotal++;
      this.lastRefusalAt = this.now();
      return refusal;
    }
    this.arriving++;
    this.arrivingByTenant.set(tenantId, (this.arrivingByTenant.get(tenantId) ?? 0) + 1);
    return null;
  }

  /** Whether a submission was refused in the last second (the cheap gate of the early refusal). */
  get refusingNow(): boolean {
    return this.cfg.enabled && this.now() - this.lastRefusalAt < 1000;
  }

  /**
   * admit() for a request looked at before routing (http/load-shedding.ts, installEarlyRefusal): a
   * refusal is counted as admit() counts it; an admission counts nothing, since the request goes on to
   * the route's hook, which calls admit() itself.
   */
  refuseEarly(tenantId: string): Refusal | null {
    if (!this.cfg.enabled) return null;
    const refusal = this.decide(tenantId);
    if (!refusal) return null;
    const a = this.arrivals.get(tenantId);
    if (a) a.count++;
    else this.arrivals.set(tenantId, { count: 1, perSecond: 0 });
    this.refusedTotal++;
    this.lastRefusalAt = this.now();
    return refusal;
  }

  /**
   * An admitted submission reached the submitter (or ended without reaching it): it no longer counts
   * as arriving. Without this count, every request of one turn would pass before any is queued.
   */
  handedOver(tenantId: string): void {
    const n = this.arrivingByTenant.get(tenantId) ?? 0;
    if (n <= 0) return;
    this.arriving--;
    if (n === 1) this.arrivingByTenant.delete(tenantId);
    else this.arrivingByTenant.set(tenantId, n - 1);
  }

  private backlog(): number {
    return this.q.backlog() + this.arriving;
  }

  private backlogFor(tenantId: string): number {
    return this.q.backlogFor(tenantId) + (this.arrivingByTenant.get(tenantId) ?? 0);
  }

  private decide(tenantId: string): Refusal | null {
    if (this.inFlightNow >= this.cfg.maxInFlight)
      return {
        reason: 'in-flight',
        message: `the service has ${this.inFlightNow} submissions in progress (limit ${this.cfg.maxInFlight})`,
        retryAfterSeconds: 1,
        details: { inFlight: this.inFlightNow, limit: this.cfg.maxInFlight },
      };
    const weight = this.weight(tenantId);
    const totalWeight = this.activeWeight + (this.active.has(tenantId) ? 0 : weight);
    const fraction = weight / totalWeight;
    const budget = this.budget();
    const share = Math.max(1, Math.floor(budget * fraction));
    const backlog = this.backlog();
    const mine = this.backlogFor(tenantId);
    // The tenant's part of the drain rate (jobs/s) if every active tenant kept its queue full.
    const fairDrain = this.drain * fraction;
    if (backlog >= budget && mine >= share)
      return {
        reason: 'backlog',
        message:
          `the queue holds ${backlog} jobs (budget ${budget}, ${this.cfg.targetWaitSeconds} s at ` +
          `${round(this.drain)} jobs/s); this tenant has ${mine} of its share of ${share}`,
        retryAfterSeconds: retryAfter(mine - share + 1, fairDrain),
        details: { backlog, budget, queued: mine, share, drainPerSecond: round(this.drain) },
      };
    // Only with a measured drain rate: a tenant's share of it is what it may submit under pressure.
    const pressure =
      this.loopDelay > this.cfg.maxLoopDelayMs || this.q.pendingCommit() >= this.cfg.maxInFlight / 2;
    if (pressure && this.drain > 0) {
      const rate = this.arrivals.get(tenantId)?.perSecond ?? 0;
      const over = rate > Math.max(fairDrain, MIN_RATE_TO_SHED);
      if (over && mine >= Math.max(MIN_QUEUED_TO_SHED, fairDrain * KEEP_QUEUED_SECONDS))
        return {
          reason: 'event-loop',
          message:
            `the service is overloaded (event-loop delay ${round(this.loopDelay)} ms); this tenant submits ` +
            `${round(rate)} jobs/s against its share of ${round(fairDrain)} jobs/s drained`,
          retryAfterSeconds: retryAfter(mine, fairDrain),
          details: {
            loopDelayMs: round(this.loopDelay),
            submitPerSecond: round(rate),
            drainPerSecond: round(fairDrain),
            queued: mine,
          },
        };
    }
    return null;
  }

  /** An admitted submission is in progress (from before its body is read until its answer is sent). */
  submissionStarted(): void {
    this.inFlightNow++;
  }

  submissionEnded(): void {
    this.inFlightNow--;
  }

  snapshot(): LoadSnapshot {
    const backlog = this.backlog();
    return {
      shedding: this.now() - this.lastRefusalAt < 1000,
      loopDelayMs: round(this.loopDelay),
      drainPerSecond: round(this.drain),
      backlog,
      backlogBudget: this.budget(),
      expectedWaitSeconds: this.drain > 0 ? round(backlog / this.drain) : backlog > 0 ? null : 0,
      inFlight: this.inFlightNow,
      refused: this.refusedTotal,
    };
  }

  private weight(tenantId: string): number {
    return this.active.get(tenantId) ?? Math.max(1e-3, this.q.weightOf(tenantId));
  }
}

const round = (x: number): number => Math.round(x * 10) / 10;

/** Seconds for `jobs` to drain at `perSecond`, whole, within [1, 60] (unknown rate: 5). */
function retryAfter(jobs: number, perSecond: number): number {
  if (!(perSecond > 0)) return 5;
  return Math.min(MAX_RETRY_SECONDS, Math.max(1, Math.ceil(jobs / perSecond)));
}
