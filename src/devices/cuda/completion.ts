/**
 * Learns when GPU work has finished without ever blocking the Node event loop: callbacks are grouped
 * per stream, one event is recorded per group (at the end of the current JS turn, so a burst of launches
 * costs one cuEventRecord), and the oldest event of each stream is queried with cuEventQuery (about a
 * microsecond) from setImmediate while work is young (new work or progress in the last SPIN_MS), then
 * from a 1 ms timer once it has run a while. setImmediate never blocks the loop: I/O and timers run
 * between polls. (A libuv 1 ms timer fires 0-1 ms late, so falling back too early shows up directly in
 * the latency of a 0.1 ms kernel.)
 * A status other than "not ready" is a device fault: it is handed to `onFault`, which fails everything.
 *
 * One exception to never blocking: when a single batch is in flight and recent batches finished within
 * the spin budget (TANDEM_CUDA_SPIN_US, default 30 µs; 0 turns it off), the poller waits for it in a
 * bounded cuEventQuery loop right after the launch instead of taking several event-loop turns. That is
 * the shape of a small latency-bound job (a 10^6-path price: ~18 µs from submit to done), where each
 * turn adds 5-10 µs and its jitter lands in the p99. With more than one batch in flight (pipelines,
 * throughput), or when batches take longer than the budget, nothing spins: there the thread has better
 * things to do than wait (a fixed spin slowed 2^26-path prices by ~20 % on the H200).
 */
import { CUDA_ERROR_NOT_READY, CUDA_SUCCESS, type CudaDriver } from './ffi/driver.js';

export type Completion = (err: Error | null) => void;

interface Batch {
  readonly event: number;
  readonly callbacks: Completion[];
  /** performance.now() when the event was recorded. */
  readonly at: number;
}

interface StreamState {
  /** Callbacks whose work is enqueued but not yet covered by a recorded event. */
  unflushed: Completion[];
  readonly batches: Batch[];
}

/** How long (ms) to spin on setImmediate after the last new work or progress before backing off to a timer. */
const SPIN_MS = 5;
/**
 * Below this many outstanding events on a stream, every operation records its own: 32, or
 * TANDEM_CUDA_OWN_EVENTS (0-1024; 0: operations enqueued in one JS turn always share one event), for
 * A/B runs. An event between two cuBLASLt kernels costs nothing measurable: GPT-2's Linear passes ran
 * within 1-2 % either way over 200-call windows (bench/RESULTS.md, the twenty-fifth session).
 */
export function ownEventsBelow(env: NodeJS.ProcessEnv = process.env): number {
  const v = env['TANDEM_CUDA_OWN_EVENTS'];
  if (v === undefined || v === '') return 32;
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 1024) : 32;
}
const OWN_EVENT_BELOW = ownEventsBelow();
const CU_EVENT_DISABLE_TIMING = 2;

/** The spin budget in µs from TANDEM_CUDA_SPIN_US (a non-negative number; default 30, 0: never spin). */
export function spinBudgetUs(env: NodeJS.ProcessEnv = process.env): number {
  const v = env['TANDEM_CUDA_SPIN_US'];
  if (v === undefined || v === '') return 30;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? Math.min(n, 1000) : 30;
}

export class CompletionPoller {
  private readonly streams = new Map<number, StreamState>();
  private readonly freeEvents: number[] = [];
  private flushQueued = false;
  private pollScheduled = false;
  private lastProgress = 0;
  private pendingBatches = 0;
  /**
   * Polls made from setImmediate and from the backoff timer (how often completion waited on a timer);
   * `callbackMs`: time spent in completion callbacks (the runtime's bookkeeping and the launches of the
   * work they release), which a busy-loop measure cannot tell from empty polls.
   */
  readonly stats = { immediatePolls: 0, timerPolls: 0, spins: 0, callbackMs: 0 };
  /** Smoothed time (ms) from recording a batch's event to seeing it complete. */
  private recentLatencyMs = 0;
  /** The batch last spun on (each is spun on at most once). */
  private spunBatch: Batch | null = null;
  private spinQueued = false;
  private readonly spinFn = (): void => this.spin();
  /**
   * Made once: a 0.1 ms kernel is polled dozens of times, and a closure per poll (besides Node's own
   * Immediate) is garbage the young generation must collect, in the middle of someone's latency.
   */
  private readonly pollFn = (): void => {
    this.pollScheduled = false;
    this.poll();
  };

  constructor(
    private readonly driver: CudaDriver,
    private readonly makeCurrent: () => void,
    private readonly onFault: (rc: number, call: string) => void,
    private readonly spinBudgetMs = spinBudgetUs() / 1000,
  ) {}

  /** Calls `cb` once all work enqueued on `stream` so far has finished (or the device faulted). */
  watch(stream: number, cb: Completion): void {
    let s = this.streams.get(stream);
    if (!s) {
      s = { unflushed: [], batches: [] };
      this.streams.set(stream, s);
    }
    s.unflushed.push(cb);
    // While few events are outstanding, each operation gets its own, so a copy's completion can start
    // the next stage of a pipeline at once; deep queues of tiny launches share one event per JS turn.
    if (s.batches.length < OWN_EVENT_BELOW) {
      this.record(stream, s);
      this.schedule();
      return;
    }
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(() => this.flush());
    }
  }

  /** Records one event per stream for the callbacks gathered this turn. */
  flush(): void {
    this.flushQueued = false;
    for (const [stream, s] of this.streams) if (s.unflushed.length > 0) this.record(stream, s);
    this.schedule();
  }

  private record(stream: number, s: StreamState): void {
    this.makeCurrent();
    // New work is polled eagerly again (also while older work is still pending on another stream: an
    // old pending batch must not push a fresh short kernel onto the timer).
    this.lastProgress = performance.now();
    const callbacks = s.unflushed;
    s.unflushed = [];
    let event: number;
    try {
      event = this.takeEvent();
    } catch (e) {
      for (const cb of callbacks) cb(e as Error);
      return;
    }
    const rc = this.driver.api.cuEventRecord(event, stream);
    if (rc !== CUDA_SUCCESS) {
      this.onFault(rc, 'cuEventRecord');
      for (const cb of callbacks) cb(this.driver.error(rc, 'cuEventRecord'));
      return;
    }
    s.batches.push({ event, callbacks, at: this.lastProgress });
    this.pendingBatches++;
  }

  get pending(): number {
    let n = this.pendingBatches;
    for (const s of this.streams.values()) n += s.unflushed.length;
    return n;
  }

  /** Fails every pending and unflushed callback (after a fault); events are dropped, not reused. */
  failAll(err: Error): void {
    const all: Completion[] = [];
    for (const s of this.streams.values()) {
      for (const b of s.batches) all.push(...b.callbacks);
      all.push(...s.unflushed);
    }
    this.streams.clear();
    this.freeEvents.length = 0;
    this.pendingBatches = 0;
    this.spunBatch = null;
    for (const cb of all) call(cb, err);
  }

  /** Drops event handles (they die with the context on reset). */
  forgetEvents(): void {
    this.freeEvents.length = 0;
  }

  private takeEvent(): number {
    const ev = this.freeEvents.pop();
    if (ev !== undefined) return ev;
    return this.driver.out1('cuEventCreate', (o) =>
      this.driver.api.cuEventCreate(o, CU_EVENT_DISABLE_TIMING),
    );
  }

  private schedule(): void {
    // The spin runs after this turn's other microtasks (the launches it covers are then in the stream).
    if (!this.spinQueued && this.pendingBatches === 1 && this.recentLatencyMs < this.spinBudgetMs) {
      this.spinQueued = true;
      queueMicrotask(this.spinFn);
    }
    if (this.pollScheduled || this.pendingBatches === 0) return;
    this.pollScheduled = true;
    if (performance.now() - this.lastProgress < SPIN_MS) {
      this.stats.immediatePolls++;
      setImmediate(this.pollFn);
    } else {
      this.stats.timerPolls++;
      setTimeout(this.pollFn, 1);
    }
  }

  /** Waits, at most the budget, for the one batch in flight (once per batch), then polls. */
  private spin(): void {
    this.spinQueued = false;
    if (this.pendingBatches !== 1) return;
    for (const s of this.streams.values()) {
      const head = s.batches[0];
      if (!head) continue;
      if (head === this.spunBatch) return;
      this.spunBatch = head;
      this.stats.spins++;
      const until = head.at + this.spinBudgetMs;
      // Any status but "not ready" ends the wait; poll() reports a fault.
      while (this.driver.api.cuEventQuery(head.event) === CUDA_ERROR_NOT_READY) {
        if (performance.now() > until) return;
      }
      this.poll();
      return;
    }
  }

  /** Queries each stream's oldest events; the wake-up that called it (if any) has cleared pollScheduled. */
  private poll(): void {
    // Made only when something finished: most polls of a running kernel find nothing.
    let ready: Completion[] | null = null;
    let lastAt = 0;
    for (const s of this.streams.values()) {
      while (s.batches.length > 0) {
        const head = s.batches[0]!;
        const rc = this.driver.api.cuEventQuery(head.event);
        if (rc === CUDA_ERROR_NOT_READY) break;
        if (rc !== CUDA_SUCCESS) {
          // Run the callbacks already known to be done first, then report the fault (which fails the rest).
          if (ready) for (const cb of ready) call(cb, null);
          this.onFault(rc, 'cuEventQuery');
          return;
        }
        s.batches.shift();
        this.pendingBatches--;
        if (head === this.spunBatch) this.spunBatch = null;
        this.freeEvents.push(head.event);
        // The first batch's list is taken over (its batch is gone; nothing else holds it).
        lastAt = head.at;
        if (ready) for (const cb of head.callbacks) ready.push(cb);
        else ready = head.callbacks;
      }
    }
    if (ready && ready.length > 0) {
      const now = performance.now();
      this.lastProgress = now;
      // The newest completed batch's latency (an upper bound: it includes the poll's own delay).
      this.recentLatencyMs = 0.75 * this.recentLatencyMs + 0.25 * (now - lastAt);
      for (const cb of ready) call(cb, null);
      this.stats.callbackMs += performance.now() - now;
    }
    this.schedule();
  }
}

/** A callback that throws must not stop the others (or leave the poller half-updated): rethrow later. */
function call(cb: Completion, err: Error | null): void {
  try {
    cb(err);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}
