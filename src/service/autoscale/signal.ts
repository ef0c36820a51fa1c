/**
 * The autoscaling signal, per device class: how many agents the class should have now, from queue depth
 * (jobs waiting or running, per agent slot) and device activity (busy fraction reported in heartbeats,
 * or running/capacity for agents without device counters). Scale-up follows demand at once; scale-down
 * waits until the lower value has held for `idleMs` (HPA's stabilization window), and a class with no
 * queued work and no activity for that long goes to zero. The same numbers feed the local autoscaler and
 * the Prometheus gauges that HPA (prometheus-adapter) or KEDA read, so all three agree.
 */
import type { AgentInfo } from '../queue/heartbeat.js';
import type { QueueCounts } from '../queue/queue.js';

export interface ScalePolicy {
  readonly min: number;
  readonly max: number;
  /** Queued + running jobs one agent is expected to handle (its concurrency, typically). */
  readonly jobsPerAgent: number;
  /** Mean device activity per agent to aim for, in (0, 1]. */
  readonly targetActivity: number;
  /** How long a lower desired count must hold before agents are taken away. */
  readonly idleMs: number;
}

export const DEFAULT_POLICY: ScalePolicy = {
  min: 0,
  max: 4,
  jobsPerAgent: 8,
  targetActivity: 0.7,
  idleMs: 5000,
};

export interface ClassSignal {
  readonly deviceClass: string;
  readonly queued: number;
  readonly running: number;
  readonly agents: number;
  /** Sum over the class's agents of their activity in [0, 1]. */
  readonly activity: number;
  /** What demand alone asks for, before stabilization. */
  readonly wanted: number;
  readonly desired: number;
}

export class ScaleSignal {
  /** Per class: since when the wanted count has been below the current desired one. */
  private readonly lowSince = new Map<string, number>();
  private readonly last = new Map<string, number>();

  constructor(private readonly policy: ScalePolicy) {}

  compute(
    counts: Readonly<Record<string, QueueCounts>>,
    agents: readonly AgentInfo[],
    now = Date.now(),
  ): ClassSignal[] {
    const classes = new Set([...Object.keys(counts), ...agents.flatMap((a) => a.deviceClasses)]);
    const out: ClassSignal[] = [];
    for (const cls of classes) {
      const c = counts[cls];
      const queued = (c?.waiting ?? 0) + (c?.delayed ?? 0);
      const running = c?.active ?? 0;
      const mine = agents.filter((a) => a.deviceClasses.includes(cls));
      const activity = mine.reduce((s, a) => s + agentActivity(a, cls), 0);
      const p = this.policy;
      const byQueue = Math.ceil((queued + running) / p.jobsPerAgent);
      const byActivity = Math.ceil(activity / p.targetActivity - 1e-9);
      const wanted = clamp(Math.max(byQueue, byActivity), p.min, p.max);
      const prev = this.last.get(cls) ?? p.min;
      let desired = wanted;
      if (wanted < prev) {
        const since = this.lowSince.get(cls) ?? now;
        this.lowSince.set(cls, since);
        desired = now - since >= p.idleMs ? wanted : prev;
      } else this.lowSince.delete(cls);
      this.last.set(cls, desired);
      out.push({ deviceClass: cls, queued, running, agents: mine.length, activity, wanted, desired });
    }
    return out.sort((a, b) => a.deviceClass.localeCompare(b.deviceClass));
  }
}

/** An agent's activity on a class: its devices' busy fraction, or its slot use when it has no counters. */
export function agentActivity(a: AgentInfo, cls: string): number {
  const devs = a.devices.filter((d) => d.deviceClass === cls);
  const device = devs.length ? devs.reduce((s, d) => s + d.utilization, 0) / devs.length : 0;
  const slots = a.capacity > 0 ? a.running / a.capacity : 0;
  return Math.min(1, Math.max(device, slots));
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}
