/**
 * A consumer of the embedded queue: a pump per lane (taking as many jobs as it has free slots), a lease
 * renewer (every lockMs/2) and a stalled-job checker (every stalledCheckMs) that puts back the jobs of
 * consumers that died, in this process or another.
 */
import { randomBytes } from 'node:crypto';
import { JobFailure, errorMessage, type ConsumeOptions, type Consumer, type QueueEvent } from './queue.js';

export interface Row {
  id: string;
  lane: string;
  priority: number;
  mem_bytes: number;
  data: string;
  attempts_made: number;
}

export type Outcome =
  | { kind: 'done'; id: string; owner: string; result: unknown }
  | { kind: 'fail'; id: string; owner: string; error: string; retry: boolean };

/** What a consumer needs of its queue (EmbeddedQueue), declared here so the two files form no cycle. */
export interface ConsumerHost {
  readonly pollMs: number;
  readonly lockMs: number;
  readonly stalledCheckMs: number;
  take(lane: string, n: number, owner: string, o: ConsumeOptions, declined: Map<string, number>): Row[];
  renew(owner: string): void;
  recoverStalled(): string[];
  settle(o: Outcome): void;
  trim(): void;
  release(owner: string): void;
  emit(e: QueueEvent): void;
  forget(c: EmbeddedConsumer): void;
}

export class EmbeddedConsumer implements Consumer {
  readonly id = `c_${randomBytes(4).toString('hex')}`;
  private readonly running = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();
  private readonly timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private pumping = false;
  /** Jobs this consumer could not hold, skipped by it (only) until the time given. */
  private readonly declined = new Map<string, number>();

  constructor(
    private readonly q: ConsumerHost,
    private readonly o: ConsumeOptions,
  ) {}

  start(): void {
    this.timers.push(
      setInterval(() => this.wake(), this.q.pollMs),
      setInterval(() => this.guard(() => this.q.renew(this.id)), this.q.lockMs / 2),
      setInterval(
        () =>
          this.guard(() => {
            this.q.recoverStalled();
            this.q.trim();
          }),
        this.q.stalledCheckMs,
      ),
    );
    this.wake();
  }

  private guard(f: () => void): void {
    if (this.stopping) return;
    try {
      f();
    } catch {
      // SQLITE_BUSY under heavy contention: the next tick tries again
    }
  }

  wake(): void {
    if (this.stopping || this.pumping) return;
    this.pumping = true;
    try {
      for (const lane of this.o.deviceClasses) {
        const room = this.o.concurrency - this.countLane(lane);
        if (room <= 0) continue;
        for (const r of this.q.take(lane, room, this.id, this.o, this.declined)) this.run(r);
      }
    } catch {
      // busy database: try again on the next poll
    } finally {
      this.pumping = false;
    }
  }

  private readonly lanes = new Map<string, string>();

  private countLane(lane: string): number {
    let n = 0;
    for (const l of this.lanes.values()) if (l === lane) n++;
    return n;
  }

  private run(r: Row): void {
    this.lanes.set(r.id, r.lane);
    const p = (async () => {
      try {
        const result = await this.o.handler(
          {
            id: r.id,
            deviceClass: r.lane,
            priority: r.priority,
            memBytes: r.mem_bytes,
            data: JSON.parse(r.data) as Record<string, unknown>,
            attemptsMade: r.attempts_made,
            progress: (fraction, message = '') => {
              this.q.emit({ type: 'progress', id: r.id, progress: fraction, message });
              return Promise.resolve();
            },
          },
          this.abort.signal,
        );
        if (!this.abort.signal.aborted) this.q.settle({ kind: 'done', id: r.id, owner: this.id, result });
      } catch (e) {
        if (!this.abort.signal.aborted)
          this.q.settle({
            kind: 'fail',
            id: r.id,
            owner: this.id,
            error: errorMessage(e),
            retry: !(e instanceof JobFailure && !e.retry),
          });
      } finally {
        this.running.delete(r.id);
        this.lanes.delete(r.id);
        setImmediate(() => this.wake());
      }
    })();
    this.running.set(r.id, p);
  }

  async close(graceMs = 5000): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    const all = Promise.allSettled([...this.running.values()]);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((res) => {
        timer = setTimeout(() => res(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.abort.abort();
      await all;
    }
    this.q.release(this.id);
    this.q.forget(this);
  }
}
