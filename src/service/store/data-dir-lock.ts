/**
 * One server per data directory: two would share one SQLite file and each re-queue the other's running
 * jobs as if they had been interrupted. `tandem serve` takes `<dataDir>/server.lock` (created with O_EXCL,
 * holding the pid and port) before it opens anything; a second server is refused with the holder's pid
 * and port. A lock whose pid is no longer alive (kill -9, a crash, a relaunch by the supervisor) is
 * stale and taken over. Released on a clean stop.
 */
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TandemError } from '../../core/errors.js';

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** null until the server has bound its port. */
  readonly port: number | null;
  readonly startedAt: string;
}

export interface DataDirLock {
  readonly file: string;
  /** Records the bound port (a server asked for port 0 learns it after listen). */
  setPort(port: number): void;
  release(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    return typeof h.pid === 'number' && Number.isInteger(h.pid) && h.pid > 0 ? (h as LockHolder) : null;
  } catch {
    return null; // gone meanwhile, or a write cut short by a crash: not a live holder
  }
}

export function lockDataDir(dataDir: string, host: string, port: number | null): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'server.lock');
  let me: LockHolder = { pid: process.pid, host, port, startedAt: new Date().toISOString() };
  const tmp = `${file}.${process.pid}.tmp`;
  // A reader never sees half a record: the lock is created whole (link of a written file, which fails
  // if the lock exists) and updated whole (rename over it).
  const record = (): void => writeFileSync(tmp, `${JSON.stringify(me)}\n`);
  for (let attempt = 0; ; attempt++) {
    record();
    try {
      linkSync(tmp, file);
      unlinkSync(tmp);
      break;
    } catch (e) {
      unlinkSync(tmp);
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw e;
    }
    const holder = readHolder(file);
    if (holder && holder.pid !== process.pid && alive(holder.pid)) {
      const where = holder.port === null ? 'still starting' : `serving on ${holder.host}:${holder.port}`;
      throw new TandemError(
        'TANDEM_ERR_DATA_DIR_LOCKED',
        `data dir ${dataDir} is in use by another tandem server (pid ${holder.pid}, ${where}); stop it, or give this one its own --data-dir`,
        { dataDir, pid: holder.pid, port: holder.port, lockFile: file },
      );
    }
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
