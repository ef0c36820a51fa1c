/**
 * What the dispatcher has admitted (jobs running, or about to start in their insert's transaction)
 * against its limits: global slots, each tenant's concurrent jobs and device memory, total device memory.
 */
import type { TenantStore } from '../auth/tenants.js';

export interface Footprint {
  readonly tenantId: string;
  readonly memBytes: number;
}

export class Admission {
  private readonly perTenant = new Map<string, { jobs: number; mem: number }>();
  private mem = 0;
  private jobs = 0;

  constructor(
    private readonly tenants: Pick<TenantStore, 'get'>,
    /** Read on every check: the service sets it to 0 while it drains. */
    private readonly limits: { readonly maxRunningJobs: number },
  ) {}

  get size(): number {
    return this.jobs;
  }

  hasSlot(): boolean {
    return this.jobs < this.limits.maxRunningJobs;
  }

  tenantRoom(j: Footprint): boolean {
    const t = this.tenants.get(j.tenantId);
    const u = this.perTenant.get(j.tenantId) ?? { jobs: 0, mem: 0 };
    if (!t) return true;
    return u.jobs < t.maxConcurrentJobs && (u.jobs === 0 || u.mem + j.memBytes <= t.maxDeviceMemoryBytes);
  }

  /** Fits the devices' memory next to what runs; always when nothing runs, so admission never livelocks. */
  fits(j: Footprint, totalDeviceMemory: number): boolean {
    return this.jobs === 0 || totalDeviceMemory === 0 || this.mem + j.memBytes <= totalDeviceMemory;
  }

  admit(j: Footprint): void {
    const u = this.perTenant.get(j.tenantId) ?? { jobs: 0, mem: 0 };
    u.jobs++;
    u.mem += j.memBytes;
    this.perTenant.set(j.tenantId, u);
    this.mem += j.memBytes;
    this.jobs++;
  }

  release(j: Footprint): void {
    const u = this.perTenant.get(j.tenantId);
    if (u) {
      u.jobs--;
      u.mem -= j.memBytes;
    }
    this.mem -= j.memBytes;
    this.jobs--;
  }

  byTenant(): ReadonlyMap<string, number> {
    const m = new Map<string, number>();
    for (const [t, v] of this.perTenant) if (v.jobs > 0) m.set(t, v.jobs);
    return m;
  }
}
