/**
 * The dynamic batcher of one model version (docs/serving.md), with Triton's knobs: requests wait in a
 * queue per priority level and leave it as batches of at most `maxBatchSize`, sent as soon as a
 * preferred size (or the maximum) can be formed or when the oldest waiting request has waited
 * `maxQueueDelayUs` since its own arrival. At most `instances` batches run at once. A request whose
 * client went away or whose deadline passed leaves the queue at once (its slot is free for another)
 * and is never run. Each request's outcome is handed back when its batch finishes.
 *
 * Hot path: a request is one object and (only when it has a deadline) one timer; the queues are
 * arrays read from a head index, so nothing is shifted or searched per request.
 */
import { TandemError, type ErrorCode } from '../../core/errors.js';
import type {
  BatchingConfig,
  BatchListener,
  BatchOutcome,
  BatchRunner,
  SubmitOptions,
} from './batching-config.js';

export * from './batching-config.js';

const QUEUED = 0;
const RUNNING = 1;
const DONE = 2;
/** The `level` of a request that timed out under onTimeout 'delay': served after every level. */
const DELAYED = -1;

function nowUs(): number {
  return performance.now() * 1000;
}

/** One request, from arrival to its answer. Returned by submit so the caller can cancel it. */
export class PendingRequest<In, Out> {
  state = QUEUED;
  level: number;
  timer: NodeJS.Timeout | null = null;
  /** True when its deadline is the client's (timeoutMs): always refused, never delayed. */
  hardDeadline = false;
  readonly promise: Promise<BatchOutcome<Out>>;
  resolve!: (o: BatchOutcome<Out>) => void;

  constructor(
    readonly item: In,
    level: number,
    readonly arrivalUs: number,
  ) {
    this.level = level;
    this.promise = new Promise((r) => (this.resolve = r));
  }
}

/** A FIFO read from a head index; dead entries (cancelled, moved) are skipped as they reach the head. */
class Fifo<T> {
  items: T[] = [];
  head = 0;
  push(x: T): void {
    this.items.push(x);
  }
  /** Drops the first `head` entries once they are most of the array (amortised O(1)). */
  compact(): void {
    if (this.head > 256 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

export class DynamicBatcher<In, Out> {
  private readonly levels: Fifo<PendingRequest<In, Out>>[];
  private readonly delayed = new Fifo<PendingRequest<In, Out>>();
  private queuedCount = 0;
  private running = 0;
  private runningItems = 0;
  private nextBatchId = 1;
  private pumpScheduled = false;
  private delayTimer: NodeJS.Timeout | null = null;
  private delayTimerAt = 0;
  private closedWith: TandemError | null = null;
  private readonly listeners: BatchListener[] = [];
  /** Mean microseconds per batch (for Retry-After), smoothed. */
  private meanBatchUs = 1000;
  private readonly preferred: readonly number[];

  constructor(
    readonly config: BatchingConfig,
    private readonly runner: BatchRunner<In, Out>,
  ) {
    this.levels = Array.from({ length: Math.max(1, config.priorityLevels) }, () => new Fifo());
    this.preferred = [...config.preferredBatchSizes]
      .filter((s) => s >= 1 && s <= config.maxBatchSize)
      .sort((a, b) => b - a);
  }

  /** Requests waiting for a batch. */
  get queued(): number {
    return this.queuedCount;
  }
  /** Batches running now. */
  get inFlight(): number {
    return this.running;
  }
  /** Requests in the batches running now. */
  get inFlightItems(): number {
    return this.runningItems;
  }
  /** Deadline timers armed now (0 once every request is answered: none leaked). */
  timersArmed = 0;

  onBatch(l: BatchListener): void {
    this.listeners.push(l);
  }

  /**
   * Queues one parsed request. Refused at once (a finished outcome) when the queue is full (429 with
   * Retry-After), the deadline is already past (504) or the batcher is closed.
   */
  submit(item: In, opts: SubmitOptions = {}): PendingRequest<In, Out> {
    const arrival = nowUs();
    const p = opts.priority ?? 0;
    const level = p <= 0 ? 0 : Math.min(this.levels.length - 1, Math.floor(p));
    const req = new PendingRequest<In, Out>(item, level, arrival);
    if (this.closedWith !== null) return this.refuse(req, this.closedWith);
    if (this.queuedCount >= this.config.maxQueueSize) {
      const drainUs =
        (Math.ceil(this.queuedCount / this.config.maxBatchSize) * this.meanBatchUs) /
        Math.max(1, this.config.instances);
      return this.refuse(
        req,
        answerError(
          'TANDEM_ERR_OVERLOADED',
          `the model's queue is full (${this.config.maxQueueSize} requests waiting)`,
          {
            retryAfterSeconds: Math.max(1, Math.ceil(drainUs / 1e6)),
            maxQueueSize: this.config.maxQueueSize,
          },
        ),
      );
    }
    const hard = opts.timeoutMs !== undefined;
    const timeoutMs = hard ? opts.timeoutMs! : this.config.timeoutUs / 1000;
    if (hard && timeoutMs <= 0) return this.refuse(req, deadlineError(0));
    if (timeoutMs > 0) {
      req.hardDeadline = hard;
      req.timer = setTimeout(() => this.expire(req, timeoutMs), timeoutMs);
      this.timersArmed++;
    }
    this.levels[level]!.push(req);
    this.queuedCount++;
    this.schedulePump();
    return req;
  }

  /**
   * The client went away: a queued request leaves the queue now (never run, slot freed); one already
   * in a running batch is answered into the void.
   */
  cancel(req: PendingRequest<In, Out>): void {
    if (req.state !== QUEUED) return;
    this.clearTimer(req);
    req.state = DONE;
    this.queuedCount--;
    req.resolve(outcome(undefined, answerError('TANDEM_ERR_CANCELLED', 'the client went away', {}), 0, 0, 0));
  }

  /** Refuses every queued request with `why` and every later one; running batches finish. */
  async close(why: TandemError): Promise<void> {
    this.closedWith = why;
    if (this.delayTimer) clearTimeout(this.delayTimer);
    this.delayTimer = null;
    for (const q of [...this.levels, this.delayed])
      for (let i = q.head; i < q.items.length; i++) {
        const r = q.items[i]!;
        if (r.state === QUEUED && (q === this.delayed ? DELAYED : this.levels.indexOf(q)) === r.level) {
          this.clearTimer(r);
          r.state = DONE;
          this.queuedCount--;
          r.resolve(outcome(undefined, why, nowUs() - r.arrivalUs, 0, 0));
        }
      }
    while (this.running > 0) await new Promise((r) => setTimeout(r, 1));
  }

  private refuse(req: PendingRequest<In, Out>, e: TandemError): PendingRequest<In, Out> {
    req.state = DONE;
    req.resolve(outcome(undefined, e, 0, 0, 0));
    return req;
  }

  private clearTimer(req: PendingRequest<In, Out>): void {
    if (req.timer !== null) {
      clearTimeout(req.timer);
      req.timer = null;
      this.timersArmed--;
    }
  }

  private expire(req: PendingRequest<In, Out>, timeoutMs: number): void {
    req.timer = null;
    this.timersArmed--;
    if (req.state !== QUEUED) return;
    if (!req.hardDeadline && this.config.onTimeout === 'delay') {
      // Served after everything else; the old entry is skipped where it stood (its level changed).
      req.level = DELAYED;
      this.delayed.push(req);
      return;
    }
    req.state = DONE;
    this.queuedCount--;
    req.resolve(outcome(undefined, deadlineError(timeoutMs), nowUs() - req.arrivalUs, 0, 0));
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // After this turn's I/O: requests that arrived together are batched together.
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Live head of a queue (skipping answered and moved requests), or undefined. */
  private headOf(q: Fifo<PendingRequest<In, Out>>, level: number): PendingRequest<In, Out> | undefined {
    while (q.head < q.items.length) {
      const r = q.items[q.head]!;
      if (r.state === QUEUED && r.level === level) return r;
      q.head++;
    }
    q.compact();
    return undefined;
  }

  private oldestArrival(): number {
    let oldest = Infinity;
    for (let l = 0; l < this.levels.length; l++) {
      const h = this.headOf(this.levels[l]!, l);
      if (h !== undefined && h.arrivalUs < oldest) oldest = h.arrivalUs;
    }
    const d = this.headOf(this.delayed, DELAYED);
    if (d !== undefined && d.arrivalUs < oldest) oldest = d.arrivalUs;
    return oldest;
  }

  /** How many to send now: the maximum, the largest preferred size that waits, or all once the delay is up. */
  private sizeToSend(now: number): number {
    const n = this.queuedCount;
    const max = this.config.maxBatchSize;
    if (n >= max) return max;
    for (const s of this.preferred) if (s <= n) return s;
    const due = this.oldestArrival() + this.config.maxQueueDelayUs;
    if (due <= now) return n;
    this.armDelayTimer(due - now);
    return 0;
  }

  private armDelayTimer(inUs: number): void {
    const at = nowUs() + inUs;
    if (this.delayTimer !== null && this.delayTimerAt <= at) return;
    if (this.delayTimer !== null) clearTimeout(this.delayTimer);
    this.delayTimerAt = at;
    this.delayTimer = setTimeout(
      () => {
        this.delayTimer = null;
        this.pump();
      },
      Math.max(0, inUs / 1000),
    );
  }

  private pump(): void {
    while (this.running < this.config.instances && this.queuedCount > 0 && this.closedWith === null) {
      const size = this.sizeToSend(nowUs());
      if (size === 0) return;
      this.startBatch(this.take(size));
    }
  }

  /**
   * The next `size` requests: highest level first, FIFO within a level, the delayed ones last; with
   * priorityBatching 'level', only the highest level that has any (the rest wait for the next batch).
   */
  private take(size: number): PendingRequest<In, Out>[] {
    const batch: PendingRequest<In, Out>[] = [];
    const oneLevel = this.config.priorityBatching === 'level';
    for (let l = this.levels.length - 1; l >= DELAYED && batch.length < size; l--) {
      if (oneLevel && batch.length > 0) break;
      const q = l === DELAYED ? this.delayed : this.levels[l]!;
      for (let r = this.headOf(q, l); r !== undefined && batch.length < size; r = this.headOf(q, l)) {
        q.head++;
        this.clearTimer(r);
        r.state = RUNNING;
        batch.push(r);
      }
    }
    this.queuedCount -= batch.length;
    return batch;
  }

  private startBatch(batch: PendingRequest<In, Out>[]): void {
    const id = this.nextBatchId++;
    const start = nowUs();
    this.running++;
    this.runningItems += batch.length;
    const items = batch.map((r) => r.item);
    let run: Promise<Array<Out | TandemError>>;
    try {
      run = this.runner(items, id);
    } catch (e) {
      run = Promise.reject(e as Error);
    }
    run.then(
      (results) => this.finish(batch, start, results),
      (e: unknown) => this.finish(batch, start, e),
    );
  }

  private finish(batch: PendingRequest<In, Out>[], start: number, results: unknown): void {
    const end = nowUs();
    const computeUs = end - start;
    this.meanBatchUs = 0.9 * this.meanBatchUs + 0.1 * computeUs;
    this.running--;
    this.runningItems -= batch.length;
    const whole = !Array.isArray(results)
      ? asTandemError(results)
      : results.length !== batch.length
        ? new TandemError(
            'TANDEM_ERR_INTERNAL',
            `the model answered ${results.length} outputs for a batch of ${batch.length}`,
          )
        : null;
    let failed = 0;
    for (let i = 0; i < batch.length; i++) {
      const r = batch[i]!;
      r.state = DONE;
      const out = whole === null ? (results as unknown[])[i] : whole;
      const queueUs = start - r.arrivalUs;
      if (out instanceof TandemError) {
        failed++;
        r.resolve(outcome(undefined, out, queueUs, computeUs, batch.length));
      } else r.resolve(outcome(out as Out, undefined, queueUs, computeUs, batch.length));
    }
    for (const l of this.listeners) l(batch.length, computeUs, failed);
    this.pump();
  }
}

function outcome<Out>(
  output: NoInfer<Out> | undefined,
  error: TandemError | undefined,
  queueUs: number,
  computeUs: number,
  batchSize: number,
): BatchOutcome<Out> {
  return { output, error, queueUs, computeUs, batchSize };
}

/**
 * An error that is an answer, not a fault (queue full, deadline passed, client gone): made without a
 * stack trace, which under overload would be most of the cost of refusing a request.
 */
function answerError(code: ErrorCode, message: string, details: Record<string, unknown>): TandemError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new TandemError(code, message, details);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function deadlineError(timeoutMs: number): TandemError {
  return answerError(
    'TANDEM_ERR_DEADLINE_EXCEEDED',
    `the request's deadline (${timeoutMs} ms) passed before its batch ran`,
    { timeoutMs },
  );
}

function asTandemError(e: unknown): TandemError {
  if (e instanceof TandemError) return e;
  return new TandemError(
    'TANDEM_ERR_INTERNAL',
    `the batch failed: ${e instanceof Error ? e.message : String(e)}`,
    {},
    { cause: e },
  );
}
