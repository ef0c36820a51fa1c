/**
 * The service's SQLite database (better-sqlite3, WAL). One file in the data directory holds tenants,
 * API keys and jobs; schema changes are additive migrations keyed by `PRAGMA user_version`.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { asTandemError } from '../../core/errors.js';

export type Db = Database.Database;

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE tenants (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL UNIQUE,
     role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
     weight REAL NOT NULL DEFAULT 1,
     max_concurrent_jobs INTEGER NOT NULL,
     max_device_memory_bytes INTEGER NOT NULL,
     max_queued_jobs INTEGER NOT NULL,
     created_at INTEGER NOT NULL
   );
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     tenant_id TEXT NOT NULL REFERENCES tenants(id),
     salt BLOB NOT NULL,
     hash BLOB NOT NULL,
     label TEXT NOT NULL DEFAULT '',
     revoked INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL
   );
   CREATE TABLE jobs (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     tenant_id TEXT NOT NULL,
     type TEXT NOT NULL,
     params TEXT NOT NULL,
     priority INTEGER NOT NULL,
     job_class TEXT NOT NULL,
     mem_bytes INTEGER NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
     progress REAL NOT NULL DEFAULT 0,
     message TEXT NOT NULL DEFAULT '',
     attempt INTEGER NOT NULL DEFAULT 0,
     cancel_requested INTEGER NOT NULL DEFAULT 0,
     idempotency_key TEXT,
     device TEXT,
     created_at INTEGER NOT NULL,
     started_at INTEGER,
     finished_at INTEGER,
     error TEXT,
     result TEXT,
     result_file TEXT,
     trace_file TEXT
   );
   CREATE UNIQUE INDEX jobs_idempotency ON jobs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
   CREATE INDEX jobs_tenant_seq ON jobs (tenant_id, seq);
   CREATE INDEX jobs_active ON jobs (state) WHERE state IN ('queued', 'running');`,
  // v2: why the job went where it did (hardware rule or the job's own device), kept after it ends.
  `ALTER TABLE jobs ADD COLUMN placement TEXT;`,
  // v3: deadlines. timeout_ms as accepted at submit; deadline_at (epoch ms) fixed at the first start and
  // kept across re-queues, so a restart never hands a job a fresh budget. A tenant's ceiling on
  // timeoutSeconds (NULL: the service default).
  `ALTER TABLE jobs ADD COLUMN timeout_ms INTEGER;
   ALTER TABLE jobs ADD COLUMN deadline_at INTEGER;
   ALTER TABLE tenants ADD COLUMN max_timeout_seconds INTEGER;`,
];

export function openDatabase(dataDir: string, durability: 'full' | 'normal'): Db {
  try {
    mkdirSync(dataDir, { recursive: true });
    const db = new Database(join(dataDir, 'tandem.sqlite'));
    db.pragma('journal_mode = WAL');
    // FULL: every commit (one per submit group) is fsynced, so an acknowledged job survives power loss.
    // NORMAL: survives kill -9 (the WAL is in the OS cache) but a power cut may drop the last commits.
    db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    const version = db.pragma('user_version', { simple: true }) as number;
    for (let v = version; v < MIGRATIONS.length; v++) {
      db.transaction(() => {
        db.exec(MIGRATIONS[v]!);
        db.pragma(`user_version = ${v + 1}`);
      })();
    }
    return db;
  } catch (e) {
    throw asTandemError(e, 'TANDEM_ERR_UNAVAILABLE', `opening the job database in ${dataDir}`);
  }
}
