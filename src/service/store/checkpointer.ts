/**
 * Moves SQLite's WAL checkpoints off the event loop. With the default `wal_autocheckpoint`, the commit
 * that takes the WAL past 1000 pages copies them into the database file and fsyncs it before it
 * returns: a job writes ~10 pages, so about every 100th job's commit stalled the loop for milliseconds
 * (the p99 of a small ?wait job). Here the server's connection never checkpoints; a worker thread with
 * its own connection runs PASSIVE checkpoints every `intervalMs` (see checkpoint-worker.ts for why
 * only PASSIVE: it never holds a lock the server's commits need).
 *
 * If the thread dies, the server's connection goes back to automatic checkpoints (slower commits now
 * and then, but a bounded WAL) and the failure is logged; nothing here throws into the server.
 */
import { Worker } from 'node:worker_threads';
import type { CheckpointMessage, CheckpointWorkerData } from './checkpoint-worker.js';
import type { Db } from './db.js';

export interface WalCheckpointerOptions {
  /** How often the thread checkpoints what is new in the WAL (default 20 ms: ~20 small jobs). */
  readonly intervalMs?: number;
  /**
   * WAL frames (pages) past which the thread restarts the WAL (default 8192, 32 MiB: ~1000 small jobs;
   * a commit meeting the restart may wait a millisecond or two; see checkpoint-worker.ts).
   */
  readonly restartFrames?: number;
  readonly log?: (level: 'warn' | 'error', msg: string) => void;
}

export interface CheckpointResult {
  /** Frames in the WAL when it ran, and how many of them are now in the database file (-1: failed). */
  readonly walFrames: number;
  readonly copied: number;
}

/** What the server's connection returns to when no thread checkpoints for it (SQLite's default). */
const AUTO_CHECKPOINT_PAGES = 1000;

export class WalCheckpointer {
  private worker: Worker | null;
  private closing = false;
  private nextId = 1;
  private readonly waiting = new Map<number, (r: CheckpointResult) => void>();
  private readonly exited: Promise<void>;

  constructor(
    private readonly db: Db,
    opts: WalCheckpointerOptions = {},
  ) {
    const log = opts.log ?? ((): void => undefined);
    const restartFrames = opts.restartFrames ?? 8192;
    // A WAL that starts again is reused from its beginning, so the file stays about restartFrames
    // long; only one that grew well past it (the thread was down) is cut back, in the commit that
    // starts it again (an ftruncate).
    const page = db.pragma('page_size', { simple: true }) as number;
    db.pragma(`journal_size_limit = ${2 * restartFrames * page}`);
    db.pragma('wal_autocheckpoint = 0');
    const data: CheckpointWorkerData = {
      file: db.name,
      synchronous: (db.pragma('synchronous', { simple: true }) as number) >= 2 ? 'FULL' : 'NORMAL',
      intervalMs: opts.intervalMs ?? 20,
      restartFrames,
    };
    // No execArgv: the server's flags (--cpu-prof, --input-type …) are not meant for this thread.
    const w = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
      workerData: data,
      execArgv: [],
    });
    // The thread never keeps the process alive: a server that is done exits without closing it first.
    w.unref();
    w.on('message', (m: CheckpointMessage) => {
      if (m.kind === 'error') log('error', `WAL checkpoint: ${m.message}`);
      else {
        const done = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (this.waiting.size === 0 && !this.closing) w.unref();
        done?.({ walFrames: m.walFrames, copied: m.copied });
      }
    });
    w.on('error', (e) => log('error', `WAL checkpoint thread: ${e.message}`));
    this.exited = new Promise((resolve) => {
      w.once('exit', (code) => {
        this.worker = null;
        for (const done of this.waiting.values()) done({ walFrames: -1, copied: -1 });
        this.waiting.clear();
        if (!this.closing) {
          log('warn', `WAL checkpoint thread exited (${code}); the server checkpoints its own WAL again`);
          if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
        }
        resolve();
      });
    });
    this.worker = w;
  }

  /** True while the thread is there to checkpoint. */
  get running(): boolean {
    return this.worker !== null;
  }

  /** One checkpoint now, on the thread (tests, and a look at how far behind the WAL is). */
  checkpointNow(): Promise<CheckpointResult> {
    const w = this.worker;
    if (!w) return Promise.resolve({ walFrames: -1, copied: -1 });
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      w.ref(); // someone awaits the answer: the process stays up until it comes
      w.postMessage({ kind: 'now', id });
    });
  }

  /**
   * Stops the thread (its connection closed, not torn down mid-checkpoint); the server's connection
   * checkpoints on its own again. Call before closing the database, whose last close checkpoints and
   * removes the WAL.
   */
  async close(): Promise<void> {
    const w = this.worker;
    this.closing = true;
    if (w) {
      w.ref(); // until it has closed its connection
      w.postMessage({ kind: 'close' });
      // A checkpoint in progress finishes first (an fsync: milliseconds); a stuck thread is ended.
      const timer = setTimeout(() => void w.terminate(), 5000);
      await this.exited;
      clearTimeout(timer);
    }
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
  }
}
