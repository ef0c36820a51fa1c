/**
 * Performance models per (kernel, data-footprint bucket, device): a short history of measured run
 * times with robust statistics, a size regression t = a·size^b across the buckets of one
 * (kernel, device), and a roofline prior from the op's cost and the device's measured peaks until a
 * bucket has enough samples.
 *
 * Robustness is the point (StarPU issue #50: a few 100x timing spikes made its history model rate
 * 6 of 8 GPUs as slow and starved them): an estimate is a median, never a mean, and a sample far
 * outside median ± k·MAD is rejected, so one spike cannot move placement. A run of rejections means
 * the device really changed speed (clocks, contention), so the history restarts from those samples.
 */

/** Samples kept per bucket (a ring); enough for a stable median, small enough to follow drift. */
const HISTORY = 32;
const DECIMATE = 8;
/** Samples a bucket needs before its own median replaces the regression or the prior. */
export const MIN_SAMPLES = 3;
/** Rejection threshold in robust standard deviations (1.4826·MAD). */
const REJECT_SIGMAS = 6;
/** Consecutive rejections that mean "the device changed", not "a spike". */
const DRIFT_RUN = 8;

export interface BucketStats {
  readonly op: string;
  readonly footprint: string;
  readonly device: string;
  /** Size used by the regression (flops, or bytes for ops without flops). */
  readonly size: number;
  readonly samples: number;
  readonly medianUs: number;
  /** Median absolute deviation (µs). */
  readonly madUs: number;
  readonly rejected: number;
  readonly total: number;
}

export interface BucketState {
  readonly size: number;
  readonly ring: number[];
  readonly rejected: number;
  readonly total: number;
}

/** Median of the first n values of a sorted array. */
function median(sorted: ArrayLike<number>, n: number): number {
  if (n === 0) return NaN;
  const m = n >> 1;
  return n & 1 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
}

/**
 * Median absolute deviation from `med` of the first n values of a sorted array, without sorting the
 * deviations: they grow outward from the median on both sides, so merging the two sides from the
 * middle gives them in order (the same numbers as sorting |x - med|, exactly).
 */
function madOfSorted(s: ArrayLike<number>, n: number, med: number): number {
  if (n === 0) return NaN;
  let lo = 0;
  while (lo + 1 < n && s[lo + 1]! <= med) lo++;
  let hi = lo + 1;
  const m = n >> 1;
  let prev = NaN;
  let cur = NaN;
  for (let k = 0; k <= m; k++) {
    prev = cur;
    if (lo >= 0 && (hi >= n || med - s[lo]! <= s[hi]! - med)) cur = med - s[lo--]!;
    else cur = s[hi++]! - med;
  }
  return n & 1 ? cur : (prev + cur) / 2;
}

/**
 * Scratch for the statistics: a typed array sorts numerically in native code, with no comparator
 * calls and no copies to collect (this runs for a stream of tiny tasks).
 */
const scratch = new Float64Array(HISTORY);

/** One (op, footprint, device) history. */
export class Bucket {
  private ring: number[] = [];
  private next = 0;
  private rejectRun: number[] = [];
  rejected = 0;
  total = 0;
  /** Accepted samples since the history filled (the statistics refresh every DECIMATE-th, see add). */
  private offered = 0;
  medianUs = NaN;
  madUs = NaN;
  /** Bumped whenever the statistics or the sample count change (cached estimates stay valid until then). */
  version = 0;

  constructor(readonly size: number) {}

  static from(s: BucketState): Bucket {
    const b = new Bucket(s.size);
    b.ring = s.ring.filter((x) => Number.isFinite(x) && x >= 0).slice(-HISTORY);
    b.rejected = s.rejected;
    b.total = s.total;
    b.refresh();
    return b;
  }

  get samples(): number {
    return this.ring.length;
  }

  /** Adds a measurement; returns false when it was rejected as an outlier. */
  add(us: number): boolean {
    if (!Number.isFinite(us) || us < 0) return false;
    this.total++;
    if (this.ring.length >= MIN_SAMPLES + 2 && this.isOutlier(us)) {
      this.rejected++;
      this.rejectRun.push(us);
      if (this.rejectRun.length >= DRIFT_RUN) {
        // Persistent change of speed: restart the history from the recent samples.
        this.ring = this.rejectRun;
        this.next = 0;
        this.rejectRun = [];
        this.refresh();
      }
      return false;
    }
    this.rejectRun.length = 0;
    if (this.ring.length < HISTORY) this.ring.push(us);
    else {
      this.ring[this.next] = us;
      this.next = (this.next + 1) % HISTORY;
    }
    // Every sample is checked against the median, but a full history re-sorts only every DECIMATE-th
    // accepted one: a stream of tiny tasks (100,000s per second) then costs no sort per task.
    if (this.ring.length < HISTORY || ++this.offered % DECIMATE === 0) this.refresh();
    return true;
  }

  private isOutlier(us: number): boolean {
    // A floor on the spread (2 % of the median) so that very steady kernels don't reject jitter.
    const sigma = Math.max(1.4826 * this.madUs, 0.02 * this.medianUs, 1);
    return Math.abs(us - this.medianUs) > REJECT_SIGMAS * sigma;
  }

  private refresh(): void {
    this.version++;
    const n = this.ring.length;
    if (n > scratch.length) {
      const s = [...this.ring].sort((a, b) => a - b);
      this.medianUs = median(s, n);
      const dev = s.map((x) => Math.abs(x - this.medianUs)).sort((a, b) => a - b);
      this.madUs = median(dev, n);
      return;
    }
    // Unused slots hold +Infinity, which sorts last, so the first n are the sorted samples.
    const s = scratch;
    s.fill(Infinity);
    for (let i = 0; i < n; i++) s[i] = this.ring[i]!;
    s.sort();
    this.medianUs = median(s, n);
    this.madUs = madOfSorted(s, n, this.medianUs);
  }

  state(): BucketState {
    return { size: this.size, ring: [...this.ring], rejected: this.rejected, total: this.total };
  }
}

/** Least squares of log t = log a + b log size over buckets with enough samples. */
export function fitPowerLaw(points: ReadonlyArray<readonly [size: number, us: number]>): {
  a: number;
  b: number;
} | null {
  const pts = points.filter(([s, t]) => s > 0 && t > 0);
  const distinct = new Set(pts.map(([s]) => s));
  if (distinct.size < 2) return null;
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let sxy = 0;
  for (const [s, t] of pts) {
    const x = Math.log(s);
    const y = Math.log(t);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const n = pts.length;
  const den = n * sxx - sx * sx;
  if (den <= 0) return null;
  const b = (n * sxy - sx * sy) / den;
  const a = Math.exp((sy - b * sx) / n);
  return Number.isFinite(a) && Number.isFinite(b) ? { a, b } : null;
}

/** Peak figures of one execution slot of a device (a CPU worker thread holds a share of the CPU). */
export interface DevicePeaks {
  /** FLOP/s by dtype for one queue. */
  readonly flops: Readonly<Record<string, number | undefined>>;
  /** Bytes/s for one queue. */
  readonly bandwidth: number | undefined;
  /** Fixed cost per launch (µs). */
  readonly launchUs: number;
}

/** Roofline time: the slower of compute at peak and memory traffic at peak bandwidth. */
export function rooflineUs(flops: number, bytes: number, dtype: string, p: DevicePeaks): number {
  const rate = p.flops[dtype] ?? p.flops['f32'];
  if (rate === undefined && p.bandwidth === undefined) return NaN;
  const compute = rate && flops > 0 ? flops / rate : 0;
  const memory = p.bandwidth && bytes > 0 ? bytes / p.bandwidth : 0;
  return p.launchUs + Math.max(compute, memory) * 1e6;
}

export type EstimateSource = 'history' | 'regression' | 'roofline' | 'none';

export interface Estimate {
  readonly us: number;
  readonly source: EstimateSource;
}

/** What a model needs to know about one task (computed once per task). */
export interface TaskShape {
  readonly op: string;
  readonly footprint: string;
  readonly size: number;
  readonly flops: number;
  readonly bytes: number;
  readonly dtype: string;
  /** `${op}|${footprint}`, precomputed by callers that estimate often. */
  readonly key?: string;
}

/**
 * All buckets, keyed by op|footprint, then by device slot. Estimates are cached per (key, device)
 * and recomputed only when a sample lands, so a placement decision costs a few map lookups.
 */
export class PerfModels {
  private readonly byKey = new Map<string, Array<Bucket | undefined>>();
  private readonly byOp = new Map<string, Set<string>>();
  private readonly cache = new Map<string, Array<Estimate | undefined>>();
  private readonly cachedByOp = new Map<string, Array<Array<Estimate | undefined>>>();
  private readonly slotOf = new Map<string, number>();
  readonly deviceKeys: string[] = [];
  private readonly peaks: Array<DevicePeaks | undefined> = [];
  dirty = false;

  /** Registers a device (by a key that changes when the hardware does); returns its slot. */
  device(key: string, peaks?: DevicePeaks): number {
    let slot = this.slotOf.get(key);
    if (slot === undefined) {
      slot = this.deviceKeys.length;
      this.deviceKeys.push(key);
      this.slotOf.set(key, slot);
    }
    if (peaks) this.peaks[slot] = peaks;
    return slot;
  }

  private bucket(shape: TaskShape, slot: number, create: boolean): Bucket | undefined {
    const key = shape.key ?? `${shape.op}|${shape.footprint}`;
    let row = this.byKey.get(key);
    if (!row) {
      if (!create) return undefined;
      row = [];
      this.byKey.set(key, row);
      let fps = this.byOp.get(shape.op);
      if (!fps) this.byOp.set(shape.op, (fps = new Set()));
      fps.add(shape.footprint);
    }
    let b = row[slot];
    if (!b && create) b = row[slot] = new Bucket(shape.size);
    return b;
  }

  /** Records a measured run; returns false when the sample was rejected as an outlier. */
  record(shape: TaskShape, slot: number, us: number): boolean {
    const b = this.bucket(shape, slot, true)!;
    const version = b.version;
    const ok = b.add(us);
    if (ok) this.dirty = true;
    if (b.version !== version) {
      // The regression of every footprint of this op on this device may change.
      const rows = this.cachedByOp.get(shape.op);
      if (rows) for (const row of rows) row[slot] = undefined;
    }
    return ok;
  }

  estimate(shape: TaskShape, slot: number): Estimate {
    const key = shape.key ?? `${shape.op}|${shape.footprint}`;
    let row = this.cache.get(key);
    if (!row) {
      this.cache.set(key, (row = []));
      let keys = this.cachedByOp.get(shape.op);
      if (!keys) this.cachedByOp.set(shape.op, (keys = []));
      keys.push(row);
    }
    let e = row[slot];
    if (!e) e = row[slot] = this.compute(shape, slot);
    return e;
  }

  private compute(shape: TaskShape, slot: number): Estimate {
    const b = this.bucket(shape, slot, false);
    if (b && b.samples >= MIN_SAMPLES) return { us: b.medianUs, source: 'history' };
    const pts: Array<[number, number]> = [];
    for (const fp of this.byOp.get(shape.op) ?? []) {
      const o = this.byKey.get(`${shape.op}|${fp}`)?.[slot];
      if (o && o.samples >= MIN_SAMPLES) pts.push([o.size, o.medianUs]);
    }
    const fit = fitPowerLaw(pts);
    if (fit && shape.size > 0) {
      // Only between (or just beyond) measured sizes: far extrapolation is worse than the prior.
      const sizes = pts.map((p) => p[0]);
      const lo = Math.min(...sizes) / 4;
      const hi = Math.max(...sizes) * 4;
      if (shape.size >= lo && shape.size <= hi)
        return { us: fit.a * shape.size ** fit.b, source: 'regression' };
    }
    const p = this.peaks[slot];
    if (p) {
      const us = rooflineUs(shape.flops, shape.bytes, shape.dtype, p);
      if (Number.isFinite(us)) {
        // A couple of samples already say more about the fixed costs than the prior does.
        if (b && b.samples > 0) return { us: b.medianUs, source: 'history' };
        return { us, source: 'roofline' };
      }
    }
    if (b && b.samples > 0) return { us: b.medianUs, source: 'history' };
    return { us: NaN, source: 'none' };
  }

  stats(): BucketStats[] {
    const out: BucketStats[] = [];
    for (const [key, row] of this.byKey) {
      const i = key.indexOf('|');
      row.forEach((b, slot) => {
        if (!b) return;
        out.push({
          op: key.slice(0, i),
          footprint: key.slice(i + 1),
          device: this.deviceKeys[slot]!,
          size: b.size,
          samples: b.samples,
          medianUs: b.medianUs,
          madUs: b.madUs,
          rejected: b.rejected,
          total: b.total,
        });
      });
    }
    return out;
  }

  /** Raw state for persistence. */
  export(): Array<{ op: string; footprint: string; device: string; bucket: BucketState }> {
    const out: Array<{ op: string; footprint: string; device: string; bucket: BucketState }> = [];
    for (const [key, row] of this.byKey) {
      const i = key.indexOf('|');
      row.forEach((b, slot) => {
        if (b)
          out.push({
            op: key.slice(0, i),
            footprint: key.slice(i + 1),
            device: this.deviceKeys[slot]!,
            bucket: b.state(),
          });
      });
    }
    return out;
  }

  import(op: string, footprint: string, device: string, state: BucketState): void {
    const slot = this.device(device);
    const key = `${op}|${footprint}`;
    let row = this.byKey.get(key);
    if (!row) this.byKey.set(key, (row = []));
    row[slot] = Bucket.from(state);
    let fps = this.byOp.get(op);
    if (!fps) this.byOp.set(op, (fps = new Set()));
    fps.add(footprint);
    this.cache.clear();
    this.cachedByOp.clear();
  }
}
