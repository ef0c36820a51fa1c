/**
 * One control-plane replica at a time does the cluster's singleton work (the reconciler, the deadline
 * sweep, committing the cancels of dead agents' jobs): the holder of a PostgreSQL session-level advisory
 * lock, on a connection of its own. PostgreSQL is already the truth every replica shares, and a session
 * lock needs no lease to renew: it is released when its connection ends, so a replica killed with -9 (or
 * cut off: TCP keepalive) hands it over without anyone waiting out a TTL. A replica that loses its lock
 * connection steps down at once (the 'error'/'end' events) and asks again at its next tick.
 *
 * The work behind the lock stays idempotent (the queue dedups by job id; every store transition is
 * fenced by state and attempt), so a moment of two leaders — an old one that has not yet noticed its
 * connection died — costs duplicate queries, never a duplicate outcome. The lock is about not
 * multiplying that work by the number of replicas and about one clear owner (`leader` in /healthz).
 */
import pg from 'pg';

export interface SingletonLock {
  /** Whether this process held the lock at its last check. */
  readonly held: boolean;
  /** Takes the lock if it is free (or confirms it is still held); false when another process holds it. */
  acquire(): Promise<boolean>;
  /** Lets it go (closes the lock's connection). */
  release(): Promise<void>;
}

/** The advisory lock's two int4 keys: one lock per deployment prefix. */
const LOCK_SQL = `SELECT pg_try_advisory_lock(hashtext('tandem-control-plane'), hashtext($1)) AS ok`;

export class PgAdvisoryLock implements SingletonLock {
  private client: pg.Client | null = null;
  private connecting: Promise<boolean> | null = null;
  private isHeld = false;

  constructor(
    private readonly url: string,
    private readonly name: string,
  ) {}

  get held(): boolean {
    return this.isHeld;
  }

  acquire(): Promise<boolean> {
    // One attempt at a time: a slow connect is not raced by the next tick.
    this.connecting ??= this.tryAcquire().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async tryAcquire(): Promise<boolean> {
    try {
      if (!this.client) {
        const c = new pg.Client({
          connectionString: this.url,
          connectionTimeoutMillis: 3000,
          query_timeout: 3000,
          keepAlive: true,
          keepAliveInitialDelayMillis: 1000,
        });
        const lost = (): void => {
          if (this.client === c) this.drop();
        };
        c.on('error', lost);
        c.on('end', lost);
        await c.connect();
        this.client = c;
      }
      if (this.isHeld) {
        // A round trip on the lock's own session: it answers, so the session (and its lock) lives.
        await this.client.query('SELECT 1');
        return true;
      }
      const r = await this.client.query<{ ok: boolean }>(LOCK_SQL, [this.name]);
      this.isHeld = r.rows[0]?.ok === true;
      return this.isHeld;
    } catch {
      this.drop();
      return false;
    }
  }

  private drop(): void {
    this.isHeld = false;
    const c = this.client;
    this.client = null;
    if (c) void c.end().catch(() => undefined);
  }

  async release(): Promise<void> {
    await this.connecting?.catch(() => false);
    const c = this.client;
    this.client = null;
    this.isHeld = false;
    if (c) await c.end().catch(() => undefined);
  }
}
