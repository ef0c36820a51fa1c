/**
 * Groups an agent's store calls: the attempts started and finished within one event-loop turn go to the
 * store as one statement each, so small jobs cost a fraction of a round trip. A call that fails because
 * the store is unreachable is retried with capped backoff (PostgreSQL restarting, a network blip) for up
 * to `giveUpMs`; only then does the job's delivery fail, and the queue re-delivers it later.
 */
import type { AttemptStart, JobStoreApi, ScaleFinish } from '../service/store/store.js';

interface Waiter<T> {
  resolve(v: T): void;
  reject(e: unknown): void;
}

export class StoreBatcher {
  private starts = new Map<string, Waiter<AttemptStart | null>[]>();
  private finishes: { id: string; attempt: number; o: ScaleFinish; w: Waiter<boolean> }[] = [];
  private scheduled = false;

  constructor(
    private readonly store: JobStoreApi,
    private readonly agent: string,
    private readonly log: (msg: string) => void,
    private readonly giveUpMs = 60_000,
  ) {}

  startAttempt(id: string): Promise<AttemptStart | null> {
    return new Promise((resolve, reject) => {
      const list = this.starts.get(id) ?? [];
      list.push({ resolve, reject });
      this.starts.set(id, list);
      this.schedule();
    });
  }

  finish(id: string, attempt: number, o: ScaleFinish): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.finishes.push({ id, attempt, o, w: { resolve, reject } });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const starts = this.starts;
    const finishes = this.finishes;
    this.starts = new Map();
    this.finishes = [];
    if (starts.size > 0) {
      try {
        const got = await this.retry('starting attempts', () =>
          this.store.startAttempts([...starts.keys()], this.agent),
        );
        for (const [id, ws] of starts) {
          // Two deliveries of one job in one batch: the first gets the attempt, the second nothing.
          ws.forEach((w, i) => w.resolve(i === 0 ? (got.get(id) ?? null) : null));
        }
      } catch (e) {
        for (const ws of starts.values()) for (const w of ws) w.reject(e);
      }
    }
    if (finishes.length > 0) {
      try {
        const landed = await this.retry('committing outcomes', () =>
          this.store.finishMany(finishes.map(({ id, attempt, o }) => ({ id, attempt, o }))),
        );
        for (const f of finishes) f.w.resolve(landed.has(f.id));
      } catch (e) {
        for (const f of finishes) f.w.reject(e);
      }
    }
  }

  private async retry<T>(what: string, f: () => Promise<T>): Promise<T> {
    const t0 = Date.now();
    for (let n = 0; ; n++) {
      try {
        return await f();
      } catch (e) {
        if (Date.now() - t0 > this.giveUpMs) throw e;
        const wait = Math.min(2000, 100 * 2 ** n);
        this.log(`${what}: ${e instanceof Error ? e.message : String(e)}; retrying in ${wait} ms`);
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
