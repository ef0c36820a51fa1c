/**
 * The dispatcher's group commit: every claim (queued → running) and every finish (running → final) of
 * one event-loop turn is written in one SQLite transaction, so one fsync makes them all durable. Each
 * used to be its own fsynced commit, ~75 % of the main thread while draining a backlog of short jobs
 * (bench/RESULTS.md, 2026-12-03): the turn in progress held every request behind it, `/healthz` too.
 *
 * Each row succeeds or fails on its own, as in the submitter's group commit: its write is one statement,
 * which SQLite rolls back alone when it fails (a trigger's ABORT, a constraint), keeping the
 * transaction; that row is told its error and the others commit. An error that ends the transaction
 * (disk full, I/O) or a failed COMMIT loses the whole turn: every row written so far, and every finish
 * not yet written, is told so (`lost`) and nothing of it is stored.
 *
 * Durability: a row's `committed` runs only once the turn is on disk: after the COMMIT and, with full
 * durability, the fdatasync of the WAL that follows it on the thread pool (store/wal-sync.ts), so the
 * loop never waits on the disk. A job is never started, or reported finished, before that.
 */
import type { JobStore } from '../store/job-store.js';

export interface TurnRow {
  /** The row's write: one store statement (plus what it needs first). Throws when the store refuses it. */
  write(): void;
  /** After the turn's COMMIT: `error` is null when the row's write landed, else why it failed alone. */
  committed(error: unknown): void;
  /** The whole turn failed (nothing of it is stored): `error` is why. */
  lost(error: unknown): void;
}

export type TurnStore = Pick<JobStore, 'inOneCommit' | 'inTransaction' | 'afterDurable'>;

export class TurnCommit {
  /** Rows written in this turn, with the error that failed each alone (null: written). */
  private readonly done: { row: TurnRow; error: unknown }[] = [];
  private open = false;

  constructor(
    private readonly store: TurnStore,
    /** A row's `committed` or `lost` threw: reported here, and the other rows still hear theirs. */
    private readonly onCallbackError: (e: unknown) => void,
    /**
     * The fdatasync after a committed turn failed: reported here, and the rows are still told they
     * committed (they are, in the database; whether a power cut would keep them is what failed).
     */
    private readonly onSyncError: (e: Error) => void = () => undefined,
  ) {}

  /**
   * Inside `run`: writes one row now. False when its statement failed alone (the others go on); throws
   * when the failure ended the transaction.
   */
  write(row: TurnRow): boolean {
    if (!this.open) throw new Error('TurnCommit.write outside run()');
    try {
      row.write();
      this.done.push({ row, error: null });
      return true;
    } catch (e) {
      this.done.push({ row, error: e ?? new Error('unknown store error') });
      if (!this.store.inTransaction) throw e; // the whole transaction was rolled back
      return false;
    }
  }

  /**
   * One transaction: `first` rows are written in order, then `more(this)` may write others (claims,
   * which can use the room the finishes just freed). Then, once durable, the outcome of each row in
   * the order written, then `after`. True when the turn committed.
   */
  run(
    first: readonly TurnRow[],
    more: (t: TurnCommit) => void,
    after: () => void = () => undefined,
  ): boolean {
    let written = 0;
    this.open = true;
    try {
      this.store.inOneCommit(() => {
        for (const row of first) {
          written++;
          this.write(row);
        }
        more(this);
      }, 'deferred');
    } catch (e) {
      this.open = false;
      const lostRows = [...this.done.map((d) => d.row), ...first.slice(written)];
      for (const row of lostRows) this.tell(() => row.lost(e));
      this.tell(after);
      return false;
    }
    this.open = false;
    this.store.afterDurable((syncError) => {
      if (syncError) this.onSyncError(syncError);
      for (const { row, error } of this.done) this.tell(() => row.committed(error));
      this.tell(after);
    });
    return true;
  }

  private tell(callback: () => void): void {
    try {
      callback();
    } catch (e) {
      this.onCallbackError(e);
    }
  }
}
