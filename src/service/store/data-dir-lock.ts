/**
 * One server per data directory: two would share one SQLite file and each re-queue the other's running
 * jobs as if they had been interrupted. `tandem serve` takes `<dataDir>/server.lock` (created with O_EXCL,
 * holding the pid and port) before it opens anything; a second server is refused with the holder's pid
 * and port. A lock whose pid is no longer alive (kill -9, a crash, a relaunch by the supervisor) is
 * stale and taken over; a zombie (exited, not yet reaped by its parent) counts as gone, as it holds no
 * file any more. Released on a clean stop.
 *
 * kill -9 of `tandem serve` kills the supervisor, not the server: the server notices its supervisor's
 * channel close and kills itself a moment later (serve-command.ts). A new `tandem serve` started at once
 * finds that server still alive. The lock records the holder's supervisor, so a holder whose supervisor
 * is gone is known to be on its way out: it is waited for (up to ORPHAN_EXIT_WAIT_MS), not refused. A
 * holder whose supervisor lives, or that has none, is refused at once.
 */
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TandemError } from '../../core/errors.js';

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** null until the server has bound its port. */
  readonly port: number | null;
  /** The supervisor the holder dies with (null when it runs unsupervised, or in a lock from before). */
  readonly supervisor?: number | null;
  readonly startedAt: string;
}

export interface LockOptions {
  /** This server's supervisor, recorded so that a later server knows this one dies with it. */
  readonly supervisorPid?: number | null;
  /** How long to wait for a holder whose supervisor is gone (ORPHAN_EXIT_WAIT_MS by default). */
  readonly orphanExitWaitMs?: number;
}

/** An orphaned server exits within milliseconds; a loop blocked by a long synchronous step may delay it. */
export const ORPHAN_EXIT_WAIT_MS = 5_000;
const ORPHAN_POLL_MS = 25;

export interface DataDirLock {
  readonly file: string;
  /** Records the bound port (a server asked for port 0 learns it after listen). */
  setPort(port: number): void;
  release(): void;
}

/** Linux: 'Z' (zombie) or 'X' (dead) once the process has exited; null where /proc cannot say. */
function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ...": comm may hold spaces and parentheses, so read after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) || null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A zombie still answers signal 0 until its parent reaps it, yet it has exited and holds nothing.
  const state = procState(pid);
  return state !== 'Z' && state !== 'X';
}

/** A holder whose supervisor is gone kills itself as soon as it notices (serve-command.ts). */
function orphaned(holder: LockHolder): boolean {
  return typeof holder.supervisor === 'number' && holder.supervisor > 0 && !alive(holder.supervisor);
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    return typeof h.pid === 'number' && Number.isInteger(h.pid) && h.pid > 0 ? (h as LockHolder) : null;
  } catch {
    return null; // gone meanwhile, or a write cut short by a crash: not a live holder
  }
}

export async function lockDataDir(
  dataDir: string,
  host: string,
  port: number | null,
  opts: LockOptions = {},
): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'server.lock');
  const waitMs = opts.orphanExitWaitMs ?? ORPHAN_EXIT_WAIT_MS;
  const waitUntil = Date.now() + waitMs;
  let me: LockHolder = {
    pid: process.pid,
    host,
    port,
    supervisor: opts.supervisorPid ?? null,
    startedAt: new Date().toISOString(),
  };
  const tmp = `${file}.${process.pid}.tmp`;
  // A reader never sees half a record: the lock is created whole (link of a written file, which fails
  // if the lock exists) and updated whole (rename over it).
  const record = (): void => writeFileSync(tmp, `${JSON.stringify(me)}\n`);
  // `takeovers` counts stale locks removed (bounded: contenders racing for one stale lock settle fast);
  // waiting for an orphaned holder is bounded by `waitUntil` instead.
  for (let takeovers = 0; ;) {
    record();
    try {
      linkSync(tmp, file);
      unlinkSync(tmp);
      break;
    } catch (e) {
      unlinkSync(tmp);
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || takeovers >= 3) throw e;
    }
    const holder = readHolder(file);
    if (holder && holder.pid !== process.pid && alive(holder.pid)) {
      const leaving = orphaned(holder);
      if (leaving && Date.now() < waitUntil) {
        await sleep(ORPHAN_POLL_MS);
        continue;
      }
      const where = holder.port === null ? 'still starting' : `serving on ${holder.host}:${holder.port}`;
      const why = leaving
        ? `; its supervisor (pid ${holder.supervisor}) is gone but it did not exit within ${waitMs} ms`
        : '';
      throw new TandemError(
        'TANDEM_ERR_DATA_DIR_LOCKED',
        `data dir ${dataDir} is in use by another tandem server (pid ${holder.pid}, ${where}${why}); stop it, or give this one its own --data-dir`,
        { dataDir, pid: holder.pid, port: holder.port, lockFile: file },
      );
    }
    takeovers++;
    // Stale (its process is gone): remove it, unless another server took it over meanwhile.
    const again = readHolder(file);
    if (again?.pid === holder?.pid) {
      try {
        unlinkSync(file);
      } catch {
        // removed by the other contender: try again
      }
    }
  }
  return {
    file,
    setPort(p) {
      me = { ...me, port: p };
      record();
      renameSync(tmp, file);
    },
    release() {
      if (readHolder(file)?.pid !== process.pid) return;
      try {
        unlinkSync(file);
      } catch {
        // already gone
      }
    },
  };
}
