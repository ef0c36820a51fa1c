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

/** The runtime a job of `tenantId` uses: charged to the tenant when sharing is on and possible. */
export function tenantRuntime(
  rt: ServiceRuntime | null,
  tenantId: string,
  weight: number,
  enabled: boolean,
): ServiceRuntime | null {
  if (!enabled || !shareCapable(rt)) return rt;
  return rt.withShare(tenantId, Number.isFinite(weight) && weight > 0 ? weight : 1);
}

/** Device time per tenant (share groups named by tenant id), for metrics; empty without sharing. */
export function tenantDeviceUsage(rt: unknown): ShareUsage[] {
  return shareCapable(rt) ? rt.shareUsage() : [];
}
