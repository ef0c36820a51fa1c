/**
 * The last ~15 minutes of per-device utilization, memory in use and device queue depth (tasks handed to
 * the device and not yet finished), plus the service's job queue, sampled on a timer into fixed ring
 * buffers. Why a timer and not the job path: a sample reads what the activity observer and the runtime
 * already keep (no query, no allocation per sample beyond a device seen for the first time), so the
 * dashboard's plots cost the jobs nothing, and a reader gets columns ready for a time-series plot.
 */

export interface DeviceSample {
  readonly id: string;
  readonly kind: string;
  readonly name: string;
  readonly memoryBytes: number;
  readonly utilization: number;
  readonly memoryUsed: number;
  /** Tasks on the device (dispatched to one of its queues, not finished). */
  readonly inflight: number;
}

export interface ServiceSample {
  readonly devices: readonly DeviceSample[];
  /** Jobs waiting in the service's queue and jobs running. */
  readonly queued: number;
  readonly running: number;
}

/** Columns of one device: index i belongs to time `t[i]` of the history. */
export interface DeviceSeries {
  readonly id: string;
  readonly kind: string;
  readonly name: string;
  readonly memoryBytes: number;
  /** null where the device was not yet (or no longer) open. */
  readonly utilization: (number | null)[];
  readonly memoryUsed: (number | null)[];
  readonly inflight: (number | null)[];
}

export interface HistoryAnswer {
  readonly intervalMs: number;
  readonly capacity: number;
  /** Sample times, epoch ms, oldest first. */
  readonly t: number[];
  readonly queued: number[];
  readonly running: number[];
  readonly devices: DeviceSeries[];
}

interface DeviceRing {
  readonly meta: { id: string; kind: string; name: string; memoryBytes: number };
  readonly utilization: Float32Array;
  readonly memoryUsed: Float64Array;
  readonly inflight: Float32Array;
  /** The sample number each slot was last written at (-1: never), so a gap reads as null. */
  readonly written: Float64Array;
}

export class DeviceHistory {
  private readonly t: Float64Array;
  private readonly queued: Float32Array;
  private readonly running: Float32Array;
  private readonly devices = new Map<string, DeviceRing>();
  /** Samples taken so far; the next goes to slot `count % capacity`. */
  private count = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly intervalMs = 1000,
    readonly capacity = 900,
  ) {
    this.t = new Float64Array(capacity);
    this.queued = new Float32Array(capacity);
    this.running = new Float32Array(capacity);
  }

  /** Samples `read()` every intervalMs (the timer does not keep the process alive). */
  start(read: () => ServiceSample): void {
    this.stop();
    const tick = (): void => this.record(Date.now(), read());
    tick();
    this.timer = setInterval(tick, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  record(now: number, s: ServiceSample): void {
    const slot = this.count % this.capacity;
    this.t[slot] = now;
    this.queued[slot] = s.queued;
    this.running[slot] = s.running;
    for (const d of s.devices) {
      let ring = this.devices.get(d.id);
      if (!ring) {
        ring = {
          meta: { id: d.id, kind: d.kind, name: d.name, memoryBytes: d.memoryBytes },
          utilization: new Float32Array(this.capacity),
          memoryUsed: new Float64Array(this.capacity),
          inflight: new Float32Array(this.capacity),
          written: new Float64Array(this.capacity).fill(-1),
        };
        this.devices.set(d.id, ring);
      }
      ring.utilization[slot] = d.utilization;
      ring.memoryUsed[slot] = d.memoryUsed;
      ring.inflight[slot] = d.inflight;
      ring.written[slot] = this.count;
    }
    this.count++;
  }

  /** Samples taken after `sinceMs` (epoch ms; all kept ones when absent), oldest first, as columns. */
  read(sinceMs = -Infinity): HistoryAnswer {
    const kept = Math.min(this.count, this.capacity);
    const first = this.count - kept;
    // Times only grow, so the first sample after `since` is found by bisection over the kept ones.
    let lo = first;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.t[mid % this.capacity]! > sinceMs) hi = mid;
      else lo = mid + 1;
    }
    const t: number[] = [];
    const queued: number[] = [];
    const running: number[] = [];
    for (let n = lo; n < this.count; n++) {
      const slot = n % this.capacity;
      t.push(this.t[slot]!);
      queued.push(this.queued[slot]!);
      running.push(this.running[slot]!);
    }
    const devices: DeviceSeries[] = [];
    for (const ring of this.devices.values()) {
      const utilization: (number | null)[] = [];
      const memoryUsed: (number | null)[] = [];
      const inflight: (number | null)[] = [];
      for (let n = lo; n < this.count; n++) {
        const slot = n % this.capacity;
        const here = ring.written[slot] === n;
        // Float32 → a short decimal (0.3 rather than 0.30000001192092896) keeps the answer small.
        utilization.push(here ? Math.round(ring.utilization[slot]! * 1e4) / 1e4 : null);
        memoryUsed.push(here ? ring.memoryUsed[slot]! : null);
        inflight.push(here ? ring.inflight[slot]! : null);
      }
      devices.push({ ...ring.meta, utilization, memoryUsed, inflight });
    }
    return { intervalMs: this.intervalMs, capacity: this.capacity, t, queued, running, devices };
  }
}
