/**
 * Device busy time from runtime task events: a sliding window gives "utilization" (fraction of the
 * last few seconds a device had a task running, in-flight tasks included, so a long kernel shows as
 * busy while it runs), and a counter gives busy seconds for Prometheus rate().
 */
import type { Observer, TaskEvent } from '../../obs/observer.js';
import { nowUs } from '../../obs/observer.js';

interface DeviceState {
  /** Finished task intervals [startUs, endUs] overlapping the window. */
  intervals: [number, number][];
  /** In-flight tasks by task id → start. */
  inflight: Map<number, number>;
  busyUs: number;
  /** The last utilization computed, and when (µs). */
  cached?: { at: number; value: number };
}

export class DeviceActivity implements Observer {
  private readonly devices = new Map<string, DeviceState>();
  constructor(private readonly windowUs = 5_000_000) {}

  private state(id: string): DeviceState {
    let s = this.devices.get(id);
    if (!s) this.devices.set(id, (s = { intervals: [], inflight: new Map(), busyUs: 0 }));
    return s;
  }

  onTaskStart(e: TaskEvent): void {
    this.state(e.deviceId).inflight.set(e.taskId, e.startUs || nowUs());
  }

  onTaskEnd(e: TaskEvent): void {
    const s = this.state(e.deviceId);
    s.inflight.delete(e.taskId);
    s.intervals.push([e.startUs, e.endUs]);
    s.busyUs += Math.max(0, e.endUs - e.startUs);
    if (s.intervals.length > 10_000) this.prune(s, nowUs());
  }

  private prune(s: DeviceState, now: number): void {
    const from = now - this.windowUs;
    s.intervals = s.intervals.filter(([, end]) => end > from);
  }

  /**
   * Busy fraction of the last window in [0, 1] (overlapping tasks on several queues count once). A value
   * at most `maxAgeUs` old is reused: the dispatcher asks for every job it places, and merging thousands
   * of intervals each time cost ~0.15 ms a job for a figure that only moves over seconds.
   */
  utilization(deviceId: string, now = nowUs(), maxAgeUs = 100_000): number {
    const s = this.devices.get(deviceId);
    if (!s) return 0;
    if (s.cached && now >= s.cached.at && now - s.cached.at <= maxAgeUs) return s.cached.value;
    const value = this.compute(s, now);
    s.cached = { at: now, value };
    return value;
  }

  private compute(s: DeviceState, now: number): number {
    this.prune(s, now);
    const from = now - this.windowUs;
    const spans: [number, number][] = s.intervals.map(([a, b]) => [Math.max(a, from), Math.min(b, now)]);
    for (const start of s.inflight.values()) spans.push([Math.max(start, from), now]);
    spans.sort((x, y) => x[0] - y[0]);
    let busy = 0;
    let curA = -Infinity;
    let curB = -Infinity;
    for (const [a, b] of spans) {
      if (b <= a) continue;
      if (a > curB) {
        if (curB > curA) busy += curB - curA;
        curA = a;
        curB = b;
      } else curB = Math.max(curB, b);
    }
    if (curB > curA) busy += curB - curA;
    return Math.min(1, busy / this.windowUs);
  }

  busySeconds(deviceId: string): number {
    return (this.devices.get(deviceId)?.busyUs ?? 0) / 1e6;
  }
}
