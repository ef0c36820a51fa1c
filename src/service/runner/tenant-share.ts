/**
 * Fair sharing of devices by tenant at the task level: each job runs on a view of the runtime that
 * charges its tasks to the tenant's share group, weighted by the tenant's weight (the same weight
 * that orders job starts in fair-queue.ts). The runtime's policy then gives a free device queue to
 * the tenant most behind in device time, so one tenant's long job cannot starve another's short one.
 */
import type { ShareUsage } from '../../runtime/shares.js';
import type { ServiceRuntime } from '../jobs/job-type.js';

/** The runtime capabilities fair sharing needs (the real Runtime has them; test fakes may not). */
interface ShareCapable {
  withShare(share: string, weight?: number): ServiceRuntime;
  shareUsage(): ShareUsage[];
}

function shareCapable(rt: unknown): rt is ShareCapable {
  return (
    typeof (rt as Partial<ShareCapable> | null)?.withShare === 'function' &&
    typeof (rt as Partial<ShareCapable>).shareUsage === 'function'
  );
}

/**
 * One view per tenant and runtime, kept: jobs of a tenant get the same object, so what job types cache
 * per runtime (the gemm job's worker kernels, registered once per runtime) stays cached.
 */
const views = new WeakMap<object, Map<string, { view: ServiceRuntime; weight: number }>>();

/** The runtime a job of `tenantId` uses: charged to the tenant when sharing is on and possible. */
export function tenantRuntime(
  rt: ServiceRuntime | null,
  tenantId: string,
  weight: number,
  enabled: boolean,
): ServiceRuntime | null {
  if (!enabled || !shareCapable(rt)) return rt;
  const w = Number.isFinite(weight) && weight > 0 ? weight : 1;
  let byTenant = views.get(rt);
  if (!byTenant) views.set(rt, (byTenant = new Map()));
  const known = byTenant.get(tenantId);
  if (known && known.weight === w) return known.view;
  // New, or its weight changed (withShare sets the group's weight).
  const view = rt.withShare(tenantId, w);
  byTenant.set(tenantId, { view, weight: w });
  return view;
}

/** Device time per tenant (share groups named by tenant id), for metrics; empty without sharing. */
export function tenantDeviceUsage(rt: unknown): ShareUsage[] {
  return shareCapable(rt) ? rt.shareUsage() : [];
}
