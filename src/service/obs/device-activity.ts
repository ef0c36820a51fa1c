/**
 * Device busy time from runtime task events: a sliding window gives "utilization" (fraction of the
 * last few seconds a device had a task running, in-flight tasks included, so a long kernel shows as
 * busy while it runs), and a counter gives busy seconds for Prometheus rate().
 */
import type { Observer, TaskEvent } from '../../obs/observer.js';
import { nowUs } from '../../obs/observer.js';

interface DeviceState {
  /**
   * Busy time as disjoint intervals sorted by start, flat ([a0, b0, a1, b1, ...]) from index `head`
   * (earlier ones left the window), merged as tasks end: tasks end nearly in order, so a new interval
   * joins or follows the last few and the busy fraction needs no sort.
   */
  merged: number[];
  head: number;
  /** Total length of merged[head..]. */
  sum: number;
  /** In-flight tasks by task id → start. */
  inflight: Map<number, number>;
  busyUs: number;
  /** The last utilization computed, and when (µs). */
  cached?: { at: number; value: number };
}

/** Intervals kept before old ones are dropped even if nobody asks for the utilization. */
const MAX_KEPT = 20_000;

export class DeviceActivity implements Observer {
  private readonly devices = new Map<string, DeviceState>();
  constructor(private readonly windowUs = 5_000_000) {}

  private state(id: string): DeviceState {
    let s = this.devices.get(id);
    if (!s) this.devices.set(id, (s = { merged: [], head: 0, sum: 0, inflight: new Map(), busyUs: 0 }));
    return s;
  }

  onTaskStart(e: TaskEvent): void {
    this.state(e.deviceId).inflight.set(e.taskId, e.startUs || nowUs());
  }

  onTaskEnd(e: TaskEvent): void {
    const s = this.state(e.deviceId);
    s.inflight.delete(e.taskId);
    s.busyUs += Math.max(0, e.endUs - e.startUs);
    this.add(s, e.startUs, e.endUs);
    if (s.merged.length - s.head > 2 * MAX_KEPT) this.prune(s, nowUs() - this.windowUs);
  }

  /** Merges [a, b] into the busy intervals. */
  private add(s: DeviceState, a: number, b: number): void {
    if (!(b > a)) return;
    const m = s.merged;
    const n = m.length;
    if (n === s.head || a > m[n - 1]!) {
      m.push(a, b);
      s.sum += b - a;
      return;
    }
    // Intervals [j, n) end at or after a (ends are sorted too, the intervals being disjoint); of
    // those, the ones starting at or before b overlap [a, b] and merge with it.
    let j = n - 2;
    while (j - 2 >= s.head && m[j - 1]! >= a) j -= 2;
    let lo = a;
    let hi = b;
    let k = j;
    for (; k < n && m[k]! <= b; k += 2) {
      lo = Math.min(lo, m[k]!);
      hi = Math.max(hi, m[k + 1]!);
      s.sum -= m[k + 1]! - m[k]!;
    }
    m.splice(j, k - j, lo, hi);
    s.sum += hi - lo;
  }

  /** Drops the intervals that ended before `from`. */
  private prune(s: DeviceState, from: number): void {
    const m = s.merged;
    while (s.head < m.length && m[s.head + 1]! <= from) {
      s.sum -= m[s.head + 1]! - m[s.head]!;
      s.head += 2;
    }
    if (s.head > 4096 && s.head * 2 > m.length) {
      s.merged = m.slice(s.head);
      s.head = 0;
    }
  }

  /**
   * Busy fraction of the last window in [0, 1] (overlapping tasks on several queues count once). A value
   * at most `maxAgeUs` old is reused (the dispatcher asks for every job it places).
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
    const from = now - this.windowUs;
    this.prune(s, from);
    const m = s.merged;
    let busy = s.sum;
    if (s.head < m.length && m[s.head]! < from) busy -= from - m[s.head]!; // the part before the window
    // In-flight tasks all run until now, so together they cover [earliest start, now]: add what of
    // that the finished intervals do not already cover.
    let earliest = Infinity;
    for (const start of s.inflight.values()) earliest = Math.min(earliest, start);
    const lo = Math.max(earliest, from);
    if (lo < now) {
      let covered = 0;
      for (let i = m.length - 2; i >= s.head && m[i + 1]! > lo; i -= 2)
        covered += Math.max(0, Math.min(m[i + 1]!, now) - Math.max(m[i]!, lo));
      busy += now - lo - covered;
    }
    return Math.min(1, Math.max(0, busy / this.windowUs));
  }

  /** Tasks started on the device and not yet ended: its queue depth as the device sees it. */
  inflight(deviceId: string): number {
    return this.devices.get(deviceId)?.inflight.size ?? 0;
  }

  busySeconds(deviceId: string): number {
    return (this.devices.get(deviceId)?.busyUs ?? 0) / 1e6;
  }
}
