/**
 * Placement for the scaled-out mode: a job goes to the lane of its device class (from the operator's
 * hardware rules), unless agents of that class are alive and none of them could ever hold it (its
 * memory footprint exceeds every advertised device). Such a job is held in the store, still queued,
 * with the reason in its message, and is placed again on a later pass (a bigger agent may join). With
 * no agent of the class alive at all the job is queued anyway: that is what scales a pool up from zero.
 */
import type { AgentInfo } from './heartbeat.js';
import type { HardwareRule } from '../config.js';
import type { JobRecord } from '../store/job-store.js';
import { HELD_PREFIX, type JobStoreApi } from '../store/store.js';
import type { JobQueue, QueueJobSpec } from './queue.js';

export interface PlaceDeps {
  readonly agents: readonly AgentInfo[];
  readonly store: JobStoreApi;
  readonly queue: JobQueue;
  readonly deviceClassOf: (job: JobRecord) => string;
}

const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;

/** Device class of a job from the hardware rules: GPU rules → 'gpu', 'cpu' → 'cpu', anything else 'cpu'. */
export function deviceClassFromRules(rules: readonly HardwareRule[]): (job: JobRecord) => string {
  return (job) => {
    const rule = rules.find((r) => r.jobClass === job.jobClass);
    return rule && /gpu|cuda|webgpu/.test(rule.deviceClass) ? 'gpu' : 'cpu';
  };
}

export async function placeJobs(
  jobs: readonly JobRecord[],
  d: PlaceDeps,
): Promise<{ queued: number; held: number }> {
  const specs: QueueJobSpec[] = [];
  let held = 0;
  for (const job of jobs) {
    const cls = d.deviceClassOf(job);
    const ofClass = d.agents.filter((a) => a.deviceClasses.includes(cls));
    const largest = Math.max(0, ...ofClass.map((a) => a.maxJobBytes[cls] ?? 0));
    if (ofClass.length > 0 && job.memBytes > largest) {
      await d.store.hold(
        job.id,
        `no live agent with a ${cls} device fits ${gib(job.memBytes)} (largest of ${ofClass.length}: ${gib(largest)}); kept queued until one joins`,
      );
      held++;
      continue;
    }
    specs.push({
      id: job.id,
      deviceClass: cls,
      priority: job.priority,
      memBytes: job.memBytes,
      data: { type: job.type, tenantId: job.tenantId },
    });
  }
  if (specs.length > 0) await d.queue.add(specs);
  return { queued: specs.length, held };
}

/** Places held jobs again (a control-plane timer calls this); returns how many went to the queue. */
export async function releaseHeld(d: PlaceDeps, limit = 1000): Promise<number> {
  const queued = await d.store.list({ tenantId: null, state: 'queued', limit });
  const held = queued.filter((j) => j.message.startsWith(HELD_PREFIX));
  if (held.length === 0) return 0;
  return (await placeJobs(held, d)).queued;
}
