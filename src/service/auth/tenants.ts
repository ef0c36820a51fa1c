/**
 * Tenants and their API keys. A key is `tdm_<keyId>_<secret>`; only sha256(salt ‖ secret) with a
 * per-key random salt is stored, so a leaked database does not leak usable keys. The secret has 192
 * random bits, which is why a fast hash is enough (no password-style stretching needed) and keeps
 * authentication off the submit path's latency budget.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TandemError } from '../../core/errors.js';
import type { TenantQuotaDefaults } from '../config.js';
import type { Db } from '../store/db.js';

export type Role = 'admin' | 'user';

export interface Tenant {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly weight: number;
  readonly maxConcurrentJobs: number;
  readonly maxDeviceMemoryBytes: number;
  readonly maxQueuedJobs: number;
  /** The longest timeoutSeconds this tenant may ask for (a job's deadline never exceeds it). */
  readonly maxTimeoutSeconds: number;
  readonly createdAt: number;
}

export interface CreatedKey {
  readonly tenant: Tenant;
  readonly keyId: string;
  /** The full key, shown once. */
  readonly key: string;
}

interface TenantRow {
  id: string;
  name: string;
  role: Role;
  weight: number;
  max_concurrent_jobs: number;
  max_device_memory_bytes: number;
  max_queued_jobs: number;
  /** NULL: the service's default (rows from before deadlines, or created without one). */
  max_timeout_seconds: number | null;
  created_at: number;
}

interface KeyRow {
  id: string;
  tenant_id: string;
  salt: Buffer;
  hash: Buffer;
  revoked: number;
}

const KEY_RE = /^tdm_([0-9a-f]{16})_([A-Za-z0-9_-]{32})$/;

function tenantFromRow(r: TenantRow, defaults: TenantQuotaDefaults): Tenant {
  return {
    id: r.id,
    name: r.name,
    role: r.role,
    weight: r.weight,
    maxConcurrentJobs: r.max_concurrent_jobs,
    maxDeviceMemoryBytes: r.max_device_memory_bytes,
    maxQueuedJobs: r.max_queued_jobs,
    maxTimeoutSeconds: r.max_timeout_seconds ?? defaults.maxTimeoutSeconds,
    createdAt: r.created_at,
  };
}

function hashSecret(salt: Buffer, secret: string): Buffer {
  return createHash('sha256').update(salt).update(secret).digest();
}

export interface NewTenant {
  readonly name: string;
  readonly role?: Role;
  readonly weight?: number;
  readonly maxConcurrentJobs?: number;
  readonly maxDeviceMemoryBytes?: number;
  readonly maxQueuedJobs?: number;
  readonly maxTimeoutSeconds?: number;
}

export class TenantStore {
  /** Verified keys (full key → tenant id), so the hot path hashes each key once per process. */
  private readonly verified = new Map<string, string>();
  private readonly tenants = new Map<string, Tenant>();

  constructor(
    private readonly db: Db,
    private readonly defaults: TenantQuotaDefaults,
  ) {
    for (const r of db.prepare('SELECT * FROM tenants').all() as TenantRow[])
      this.tenants.set(r.id, tenantFromRow(r, defaults));
  }

  list(): Tenant[] {
    return [...this.tenants.values()];
  }

  get(id: string): Tenant | null {
    return this.tenants.get(id) ?? null;
  }

  byName(name: string): Tenant | null {
    for (const t of this.tenants.values()) if (t.name === name) return t;
    return null;
  }

  createTenant(t: NewTenant, now = Date.now()): Tenant {
    if (!/^[a-z0-9][a-z0-9_.-]{0,63}$/i.test(t.name))
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'a tenant name is 1-64 letters, digits, _ . -', {
        name: t.name,
      });
    if (this.byName(t.name)) throw new TandemError('TANDEM_ERR_CONFLICT', `tenant "${t.name}" exists`);
    const row: TenantRow = {
      id: `ten_${randomBytes(6).toString('hex')}`,
      name: t.name,
      role: t.role ?? 'user',
      weight: t.weight ?? 1,
      max_concurrent_jobs: t.maxConcurrentJobs ?? this.defaults.maxConcurrentJobs,
      max_device_memory_bytes: t.maxDeviceMemoryBytes ?? this.defaults.maxDeviceMemoryBytes,
      max_queued_jobs: t.maxQueuedJobs ?? this.defaults.maxQueuedJobs,
      max_timeout_seconds: t.maxTimeoutSeconds ?? null,
      created_at: now,
    };
    this.db
      .prepare(
        `INSERT INTO tenants (id, name, role, weight, max_concurrent_jobs, max_device_memory_bytes, max_queued_jobs, max_timeout_seconds, created_at)
         VALUES (@id, @name, @role, @weight, @max_concurrent_jobs, @max_device_memory_bytes, @max_queued_jobs, @max_timeout_seconds, @created_at)`,
      )
      .run(row);
    const tenant = tenantFromRow(row, this.defaults);
    this.tenants.set(tenant.id, tenant);
    return tenant;
  }

  createKey(tenantId: string, label = '', now = Date.now()): CreatedKey {
    const tenant = this.get(tenantId);
    if (!tenant) throw new TandemError('TANDEM_ERR_NOT_FOUND', `no tenant ${tenantId}`);
    const keyId = randomBytes(8).toString('hex');
    const secret = randomBytes(24).toString('base64url');
    const salt = randomBytes(16);
    this.db
      .prepare(
        'INSERT INTO api_keys (id, tenant_id, salt, hash, label, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(keyId, tenantId, salt, hashSecret(salt, secret), label, now);
    return { tenant, keyId, key: `tdm_${keyId}_${secret}` };
  }

  revokeKey(keyId: string): boolean {
    for (const [k] of this.verified) if (k.startsWith(`tdm_${keyId}_`)) this.verified.delete(k);
    return this.db.prepare('UPDATE api_keys SET revoked = 1 WHERE id = ?').run(keyId).changes === 1;
  }

  /** The tenant a key belongs to, or null for a malformed, unknown, revoked or wrong key. */
  authenticate(key: string): Tenant | null {
    const cached = this.verified.get(key);
    if (cached !== undefined) return this.get(cached);
    const m = KEY_RE.exec(key);
    if (!m) return null;
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(m[1]) as KeyRow | undefined;
    if (!row || row.revoked) return null;
    if (!timingSafeEqual(hashSecret(row.salt, m[2]!), row.hash)) return null;
    if (this.verified.size > 10_000) this.verified.clear();
    this.verified.set(key, row.tenant_id);
    return this.get(row.tenant_id);
  }

  /** First start: creates the admin tenant and returns its key (to print once), else null. */
  bootstrapAdmin(): CreatedKey | null {
    if (this.list().some((t) => t.role === 'admin')) return null;
    const admin = this.createTenant({ name: 'admin', role: 'admin' });
    return this.createKey(admin.id, 'bootstrap');
  }
}
