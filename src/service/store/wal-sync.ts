/**
 * Makes group commits durable off the event loop. With `synchronous = FULL` SQLite fsyncs the WAL inside
 * COMMIT, on the main thread: 4 ms at the median and 12 ms at p99 on the 2-core VM's disk under load
 * (bench/RESULTS.md, 2026-12-03), and with a submit group and a dispatcher turn committing in every
 * event-loop turn, every request (`/healthz` too) waited behind two of them. The group commits now run
 * with `synchronous = NORMAL` (in WAL mode: no sync at COMMIT; the frames are written, with checksums,
 * to the WAL in the page cache) and their callers wait here for an fdatasync of the WAL on libuv's
 * thread pool before they acknowledge anything. fsync is per file on Linux, not per descriptor, so a
 * descriptor of our own flushes what SQLite wrote through its own.
 *
 * Syncs are coalesced: one in flight at a time; callers that arrive meanwhile share the next one (a sync
 * that began before their commit might not cover it). Kill -9 loses nothing either way (the page cache
 * outlives the process); on power loss, what was acknowledged had been synced. What other readers of the
 * database see (a job listed, a state shown) may run up to one sync ahead of the disk, as with any
 * commit whose acknowledgement waits for the flush.
 */
import { close, fdatasync, open } from 'node:fs';

export type SyncCallback = (error: Error | null) => void;

export class WalSync {
  private waiting: SyncCallback[] = [];
  private syncing = false;
  /** Syncs completed (for tests and benchmarks). */
  syncs = 0;

  constructor(
    private readonly walPath: string,
    /** A callback threw: reported here; the other callbacks of its sync still run. */
    private readonly onCallbackError: (e: unknown) => void = () => undefined,
  ) {}

  /** Calls `cb` once everything committed before this call is on disk (or with the error that prevented it). */
  after(cb: SyncCallback): void {
    this.waiting.push(cb);
    if (!this.syncing) this.start();
  }

  /** Callers waiting for a sync. */
  get pending(): number {
    return this.waiting.length;
  }

  private start(): void {
    const batch = this.waiting;
    this.waiting = [];
    this.syncing = true;
    open(this.walPath, 'r', (openError, fd) => {
      if (openError) return this.done(batch, openError);
      fdatasync(fd, (syncError) => close(fd, () => this.done(batch, syncError)));
    });
  }

  private done(batch: readonly SyncCallback[], error: Error | null): void {
    this.syncing = false;
    this.syncs++;
    for (const cb of batch)
      try {
        cb(error);
      } catch (e) {
        this.onCallbackError(e);
      }
    if (this.waiting.length > 0) this.start();
  }
}
