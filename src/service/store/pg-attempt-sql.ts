/**
 * The statements that move a job through an attempt and log it in tandem_attempts, each one round trip:
 * a start locks the row, bumps the attempt and logs it (and whether another was still in flight, a
 * duplicate execution); a finish lands only for the attempt that is running, marks a late attempt
 * superseded and earlier unfinished ones lost. Kept apart from pg-store.ts because this fencing is the
 * store's contract (docs/scale-out.md) and reads best as SQL on its own. Continuation lines keep the
 * indentation they had inline in pg-store.ts, so the text sent to the server is what it was.
 */

/**
 * Starts one job's next attempt. $1 job id, $2 now (epoch ms), $3 agent. The deadline is set at the
 * first start and kept by re-runs (runner/deadlines.ts says why). Returns the job's row and old_state.
 */
export const START_ATTEMPT_SQL = `WITH old AS (SELECT id, state AS old_state FROM tandem_jobs WHERE id = $1 FOR UPDATE),
       upd AS (
         UPDATE tandem_jobs j SET state = 'running', attempt = j.attempt + 1, started_at = $2, device = $3,
           progress = 0, message = '', deadline_at = COALESCE(j.deadline_at, $2 + j.timeout_ms)
         FROM old WHERE j.id = old.id AND j.state IN ('queued', 'running') AND NOT j.cancel_requested
         RETURNING j.*, old.old_state),
       log AS (INSERT INTO tandem_attempts (job_id, attempt, agent, started_at, rerun)
         SELECT id, attempt, $3, $2, old_state = 'running' FROM upd)
       SELECT * FROM upd`;

/** START_ATTEMPT_SQL for many jobs: $1 job ids (text[]), rows locked in id order. */
export const START_ATTEMPTS_SQL = `WITH old AS (SELECT id, state AS old_state FROM tandem_jobs WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
       upd AS (
         UPDATE tandem_jobs j SET state = 'running', attempt = j.attempt + 1, started_at = $2, device = $3,
           progress = 0, message = '', deadline_at = COALESCE(j.deadline_at, $2 + j.timeout_ms)
         FROM old WHERE j.id = old.id AND j.state IN ('queued', 'running') AND NOT j.cancel_requested
         RETURNING j.*, old.old_state),
       log AS (INSERT INTO tandem_attempts (job_id, attempt, agent, started_at, rerun)
         SELECT id, attempt, $3, $2, old_state = 'running' FROM upd)
       SELECT * FROM upd`;

/**
 * Finishes many (job, attempt) pairs: $1 ids, $2 attempts, $3 states, $4 results, $5 errors, $6 traces
 * (parallel arrays, JSON text or null), $7 now. Returns the ids whose outcome landed.
 */
export const FINISH_MANY_SQL = `WITH v AS (
         SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[])
           AS v(id, attempt, state, result, error, trace)),
       upd AS (
         UPDATE tandem_jobs j SET state = v.state, finished_at = $7, result = v.result, error = v.error,
           progress = CASE WHEN v.state = 'succeeded' THEN 1 ELSE j.progress END
         FROM v WHERE j.id = v.id AND j.state = 'running' AND j.attempt = v.attempt RETURNING j.id, j.attempt),
       log AS (
         UPDATE tandem_attempts a SET finished_at = $7, trace = v.trace,
           outcome = CASE WHEN EXISTS (SELECT 1 FROM upd WHERE upd.id = v.id) THEN v.state ELSE 'superseded' END
         FROM v WHERE a.job_id = v.id AND a.attempt = v.attempt AND a.outcome IS NULL),
       lost AS (
         UPDATE tandem_attempts a SET outcome = 'lost'
         FROM upd WHERE a.job_id = upd.id AND a.attempt < upd.attempt AND a.outcome IS NULL)
       SELECT id FROM upd`;

/**
 * Finishes one attempt: $1 job id, $2 attempt, $3 state, $4 now, $5 result, $6 error, $7 trace (JSON
 * text or null). Returns n = 1 when the outcome landed.
 */
export const FINISH_SQL = `WITH upd AS (
         UPDATE tandem_jobs SET state = $3, finished_at = $4, result = $5, error = $6,
           progress = CASE WHEN $3 = 'succeeded' THEN 1 ELSE progress END
         WHERE id = $1 AND state = 'running' AND attempt = $2 RETURNING id),
       log AS (
         UPDATE tandem_attempts SET finished_at = $4, trace = $7,
           outcome = CASE WHEN EXISTS (SELECT 1 FROM upd) THEN $3 ELSE 'superseded' END
         WHERE job_id = $1 AND attempt = $2 AND outcome IS NULL),
       lost AS (
         UPDATE tandem_attempts SET outcome = 'lost'
         WHERE job_id = $1 AND attempt < $2 AND outcome IS NULL AND EXISTS (SELECT 1 FROM upd))
       SELECT COUNT(*) AS n FROM upd`;
