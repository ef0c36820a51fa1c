/**
 * The WAL checkpointer's thread (started by `checkpointer.ts`): its own connection to the service's
 * database, copying committed WAL frames into the database file so that the event loop's commits never
 * do it (SQLite's automatic checkpoint runs inside the commit that crosses 1000 WAL pages: a copy and
 * an fsync of the database file, milliseconds, on whichever request made that commit).
 *
 * PASSIVE checkpoints: they take no lock a writer needs (WAL_WRITE_LOCK), so the server's connection
 * never meets SQLITE_BUSY because of this thread and never sleeps in its busy handler (1, 2, 5 … ms with
 * `busy_timeout`). FULL, RESTART and TRUNCATE hold the write lock while they copy, sync and wait for
 * readers, and a commit arriving then sleeps: the ~100 ms stalls a first version of this had.
 *
 * What bounds the WAL file: the server's writer starts the WAL again from its beginning only when, as
 * its transaction begins, every frame is already in the database file. Under steady load a PASSIVE
 * checkpoint (two fsyncs, ~0.7 ms here) nearly always overlaps a commit, so it never ends caught up, and
 * with PASSIVE alone the WAL grew without bound (585 MiB after 20,000 jobs in bench/wal-checkpoint.ts;
 * checkpointing again at once, only what came in meanwhile, did not catch up either). So past
 * `restartFrames` the thread runs one RESTART right after a PASSIVE, without waiting for any lock
 * (busy_timeout 0: if a commit holds the write lock it tries again at the next tick). It holds the write
 * lock while it copies the few frames the PASSIVE left and syncs (~1 ms), so a commit arriving then
 * sleeps in the server's busy handler (1, then 2 ms): a stall of a few ms once per `restartFrames` of
 * WAL (~1000 small jobs), against ~8 ms every ~130 jobs with automatic checkpoints; under bursty load
 * the WAL starts again by itself after a quiet moment and no RESTART is needed.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointWorkerData {
  readonly file: string;
  readonly synchronous: 'FULL' | 'NORMAL';
  /** How often to look for new WAL frames (a look with none is a few µs and syncs nothing). */
  readonly intervalMs: number;
  /** WAL frames past which one RESTART is run (busy: tried again at the next tick). */
  readonly restartFrames: number;
}

/** The thread's answers: to a `now` request (the checkpoint it ran), and any failure. */
export type CheckpointMessage =
  | {
      readonly kind: 'checkpoint';
      readonly id: number;
      readonly walFrames: number;
      readonly copied: number;
    }
  | { readonly kind: 'error'; readonly message: string };

const data = workerData as CheckpointWorkerData;
const port = parentPort!;
const db = new Database(data.file, { fileMustExist: true });
// The checkpoint syncs the WAL and the database file by this connection's setting: keep the server's.
db.pragma(`synchronous = ${data.synchronous}`);
// Never wait on a lock: PASSIVE does not invoke the busy handler anyway, and nothing else runs here.
db.pragma('busy_timeout = 0');
db.pragma('wal_autocheckpoint = 0');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
let lastError = '';

interface Ckpt {
  busy: number;
  log: number;
  checkpointed: number;
}

function tick(): { walFrames: number; copied: number } | null {
  try {
    let r = passive.get() as Ckpt;
    if (r.log > data.restartFrames) r = restart.get() as Ckpt;
    lastError = '';
    return { walFrames: r.log, copied: r.checkpointed };
  } catch (e) {
    // Told once per distinct failure (a disk error would otherwise be logged 50 times a second).
    const message = e instanceof Error ? e.message : String(e);
    if (message !== lastError) port.postMessage({ kind: 'error', message } satisfies CheckpointMessage);
    lastError = message;
    return null;
  }
}

const timer = setInterval(tick, data.intervalMs);
port.on('message', (m: { kind: string; id?: number }) => {
  if (m.kind === 'now') {
    const r = tick() ?? { walFrames: -1, copied: -1 };
    port.postMessage({ kind: 'checkpoint', id: m.id ?? 0, ...r } satisfies CheckpointMessage);
  } else if (m.kind === 'close') {
    clearInterval(timer);
    db.close();
    port.close();
  }
});
