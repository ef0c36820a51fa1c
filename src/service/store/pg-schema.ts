/**
 * The PostgreSQL job store's tables and indexes, run by PgJobStore.open on every connect, so it is
 * idempotent (IF NOT EXISTS), and columns added after the first release come as ADD COLUMN IF NOT EXISTS
 * so a database made by an older version gains them. Kept apart from pg-store.ts so the schema reads in
 * one piece instead of between the store's imports and its queries.
 */

/** tandem_jobs (one row a job, as the SQLite store's jobs table) and tandem_attempts (the attempt log). */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS tandem_jobs (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  tenant_id TEXT NOT NULL,
  type TEXT NOT NULL,
  params TEXT NOT NULL,
  priority INTEGER NOT NULL,
  job_class TEXT NOT NULL,
  mem_bytes BIGINT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  progress DOUBLE PRECISION NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  attempt INTEGER NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  idempotency_key TEXT,
  device TEXT,
  placement TEXT,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  finished_at BIGINT,
  error TEXT,
  result TEXT
);
ALTER TABLE tandem_jobs ADD COLUMN IF NOT EXISTS timeout_ms BIGINT;
ALTER TABLE tandem_jobs ADD COLUMN IF NOT EXISTS deadline_at BIGINT;
CREATE UNIQUE INDEX IF NOT EXISTS tandem_jobs_idem ON tandem_jobs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tandem_jobs_tenant_seq ON tandem_jobs (tenant_id, seq);
CREATE INDEX IF NOT EXISTS tandem_jobs_queued_tenant ON tandem_jobs (tenant_id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS tandem_jobs_finished_at ON tandem_jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS tandem_jobs_running_deadline ON tandem_jobs (deadline_at) WHERE state = 'running';
CREATE TABLE IF NOT EXISTS tandem_attempts (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  agent TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  rerun BOOLEAN NOT NULL,
  finished_at BIGINT,
  outcome TEXT,
  trace TEXT,
  PRIMARY KEY (job_id, attempt)
);`;
