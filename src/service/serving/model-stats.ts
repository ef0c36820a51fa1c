/**
 * Live figures of one model version for its description and the dashboard's page: totals, the last
 * 60 seconds per second (requests, batches, items in batches) and the latency of the last 2048
 * answered requests. Fixed-size arrays, so recording a request allocates nothing.
 */

const SECONDS = 60;
const LATENCIES = 2048;

export interface ModelStatsView {
  readonly requests: number;
  readonly failures: number;
  readonly batches: number;
  /** Mean items per batch since load. */
  readonly meanBatchSize: number;
  /** Answered requests a second over the last 10 s. */
  readonly throughput: number;
  /** Request latency (arrival to answer, in the service) over the last 2048 requests, ms. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** The last 60 s, oldest first: requests, batches and mean batch size per second. */
  readonly perSecond: { readonly t: number; readonly requests: number; readonly meanBatchSize: number }[];
}

export class ModelStats {
  requests = 0;
  failures = 0;
  batches = 0;
  private batchItems = 0;
  private readonly secReq = new Float64Array(SECONDS);
  private readonly secBatches = new Float64Array(SECONDS);
  private readonly secItems = new Float64Array(SECONDS);
  private readonly secStamp = new Float64Array(SECONDS);
  private readonly lat = new Float64Array(LATENCIES);
  private latCount = 0;

  private slot(nowS: number): number {
    const i = nowS % SECONDS;
    if (this.secStamp[i] !== nowS) {
      this.secStamp[i] = nowS;
      this.secReq[i] = 0;
      this.secBatches[i] = 0;
      this.secItems[i] = 0;
    }
    return i;
  }

  request(latencyMs: number, failed: boolean): void {
    this.requests++;
    if (failed) this.failures++;
    this.secReq[this.slot(Math.floor(Date.now() / 1000))]++;
    this.lat[this.latCount++ % LATENCIES] = latencyMs;
  }

  batch(size: number): void {
    this.batches++;
    this.batchItems += size;
    const i = this.slot(Math.floor(Date.now() / 1000));
    this.secBatches[i]++;
    this.secItems[i] += size;
  }

  view(): ModelStatsView {
    const nowS = Math.floor(Date.now() / 1000);
    const perSecond: { t: number; requests: number; meanBatchSize: number }[] = [];
    let recent = 0;
    for (let t = nowS - SECONDS + 1; t <= nowS; t++) {
      const i = t % SECONDS;
      const live = this.secStamp[i] === t;
      const req = live ? this.secReq[i]! : 0;
      const b = live ? this.secBatches[i]! : 0;
      perSecond.push({ t, requests: req, meanBatchSize: b > 0 ? this.secItems[i]! / b : 0 });
      if (t > nowS - 10) recent += req;
    }
    const n = Math.min(this.latCount, LATENCIES);
    const sorted = Array.from(this.lat.subarray(0, n)).sort((a, b) => a - b);
    const q = (p: number): number | null => (n === 0 ? null : sorted[Math.min(n - 1, Math.floor(p * n))]!);
    return {
      requests: this.requests,
      failures: this.failures,
      batches: this.batches,
      meanBatchSize: this.batches > 0 ? this.batchItems / this.batches : 0,
      throughput: recent / 10,
      p50Ms: q(0.5),
      p99Ms: q(0.99),
      perSecond,
    };
  }
}
