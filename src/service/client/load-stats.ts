/**
 * The load generator's arithmetic: concurrency sweeps ("1:64", "a:b:step", "8"), the Server-Timing
 * header of the interactive lane, and percentiles over growing sample buffers (no object per sample,
 * so the generator's own garbage does not disturb the server it measures in the same process).
 */
import { TandemError } from '../../core/errors.js';

/**
 * "8" → [8]; "1:64" → 1, 2, 4, ..., 64 (doubling, perf_analyzer's default sweep, 64 included);
 * "a:b:step" → a, a+step, ..., up to b.
 */
export function parseConcurrency(text: string): number[] {
  const parts = text.split(':');
  const nums = parts.map((p) => Number(p));
  const bad = (): TandemError =>
    new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `concurrency "${text}": give n, a:b or a:b:step (integers >= 1)`,
      {
        field: 'concurrency',
      },
    );
  if (parts.length > 3 || nums.some((n) => !Number.isInteger(n) || n < 1 || n > 65536)) throw bad();
  const [a, b, step] = nums as [number, number | undefined, number | undefined];
  if (b === undefined) return [a];
  if (b < a) throw bad();
  const out: number[] = [];
  if (step === undefined) {
    for (let c = a; c < b; c *= 2) out.push(c);
    out.push(b);
  } else {
    for (let c = a; c <= b; c += step) out.push(c);
  }
  return out;
}

/**
 * The lane's split of one request: `queue;dur=0.12, compute;dur=0.50, serialize;dur=0.01, request;dur=0.05`
 * (ms); `request` is the server's time from the request's arrival until it was queued (routing, auth, body
 * parse, validation, the model's parse).
 */
export interface ServerSplit {
  queue: number;
  compute: number;
  serialize: number;
  request: number;
}

/** Parses a Server-Timing header into `into` (missing entries become NaN); false when there is none. */
export function parseServerTiming(header: string | undefined, into: ServerSplit): boolean {
  into.queue = NaN;
  into.compute = NaN;
  into.serialize = NaN;
  into.request = NaN;
  if (!header) return false;
  for (const entry of header.split(',')) {
    const semi = entry.indexOf(';');
    if (semi < 0) continue;
    const name = entry.slice(0, semi).trim();
    const m = /dur=([0-9.eE+-]+)/.exec(entry);
    if (!m) continue;
    const v = Number(m[1]);
    if (name === 'queue' || name === 'compute' || name === 'serialize' || name === 'request') into[name] = v;
  }
  return true;
}

/** A growing buffer of numbers (latencies in ms), percentiles by sorting a copy at the end. */
export class Samples {
  private data = new Float64Array(1024);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }

  /** The samples pushed so far, in order (a copy). */
  values(): Float64Array {
    return this.data.slice(0, this.length);
  }

  /** Appends every sample of `xs`. */
  pushAll(xs: ArrayLike<number>): void {
    for (let i = 0; i < xs.length; i++) this.push(xs[i]!);
  }

  summary(): LatencySummary {
    const n = this.length;
    if (n === 0) return { count: 0, mean: NaN, p50: NaN, p95: NaN, p99: NaN, max: NaN };
    const sorted = this.data.slice(0, n).sort();
    let sum = 0;
    for (let i = 0; i < n; i++) sum += sorted[i]!;
    const q = (p: number): number => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))]!;
    return { count: n, mean: sum / n, p50: q(0.5), p95: q(0.95), p99: q(0.99), max: sorted[n - 1]! };
  }
}

/** Latencies in milliseconds; percentiles are nearest-rank. */
export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}
