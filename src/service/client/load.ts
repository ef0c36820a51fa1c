/**
 * A closed-loop load generator for the interactive lane (perf_analyzer's concurrency mode): N clients,
 * each on its own keep-alive connection, each sending its next infer request as soon as the previous
 * one is answered. A warm-up, then a measured window (by time or by request count); the report has
 * infer/s, the client's latency percentiles, the server's split from `Server-Timing`, the executed
 * batch sizes from `x-tandem-batch-size` and errors by status. Used by `tandem perf` and the benches.
 */
import http from 'node:http';
import https from 'node:https';
import { TandemError } from '../../core/errors.js';
import { parseServerTiming, Samples, type LatencySummary, type ServerSplit } from './load-stats.js';

export { parseConcurrency, parseServerTiming, type LatencySummary } from './load-stats.js';

export interface LoadTarget {
  /** Service base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly key: string | null;
  readonly model: string;
  readonly version?: number;
}

/** One request to send: its JSON body, a label to report it under, and a client-side abort. */
export interface LoadRequest {
  /** A JSON body, or (with `headers` naming its content type) a binary one. */
  readonly body: string | Uint8Array;
  /** Extra request headers, e.g. a binary tensor body's content-type and Inference-Header-Content-Length. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Latencies are also reported per label (e.g. 'high' / 'low' priority). */
  readonly label?: string;
  /** Abandon the request (close its connection) this long after sending it: a client that gives up. */
  readonly abortAfterMs?: number;
}

export interface LoadOptions {
  readonly concurrency: number;
  /** The i-th request (i counts from 0 over all clients, warm-up included). */
  readonly request: (i: number) => LoadRequest;
  /** Warm-up before measuring (default 1 s; requests answered in it are not counted). */
  readonly warmupSeconds?: number;
  /** The measured window (default 5 s). */
  readonly seconds?: number;
  /** Stop after this many measured requests (sent after the warm-up), if that comes before `seconds`. */
  readonly requests?: number;
}

export interface SplitSummary {
  mean: number;
  p99: number;
}

export interface LoadReport {
  concurrency: number;
  /** Requests sent in the measured window and answered (any status) or aborted. */
  requests: number;
  seconds: number;
  /** Successful (2xx) answers per second over the window. */
  inferPerSec: number;
  /** Latency of successful requests, ms. */
  client: LatencySummary;
  /** The server's own split of successful requests (ms), from Server-Timing. */
  server: { queue: SplitSummary; compute: SplitSummary; serialize: SplitSummary; request: SplitSummary };
  /** Batch size the server ran each successful request in → how many requests. */
  batchSizes: Record<string, number>;
  /** Failures by HTTP status, 'network' (no answer) or 'aborted' (the client gave up). */
  errors: Record<string, number>;
  /** Successful latencies per request label. */
  labels: Record<string, LatencySummary>;
  /** The server's queue time (Server-Timing) of successful requests per label: the batcher's share. */
  labelQueues: Record<string, LatencySummary>;
}

interface Answer {
  status: number | 'network' | 'aborted';
  timing: string | undefined;
  batchSize: string | undefined;
}

class Recorder {
  readonly client = new Samples();
  readonly queue = new Samples();
  readonly compute = new Samples();
  readonly serialize = new Samples();
  readonly request = new Samples();
  readonly labels = new Map<string, Samples>();
  readonly labelQueues = new Map<string, Samples>();
  readonly batchSizes: Record<string, number> = {};
  readonly errors: Record<string, number> = {};
  requests = 0;
  private readonly split: ServerSplit = { queue: NaN, compute: NaN, serialize: NaN, request: NaN };

  record(a: Answer, ms: number, label: string | undefined): void {
    this.requests++;
    if (typeof a.status !== 'number' || a.status < 200 || a.status >= 300) {
      const k = String(a.status);
      this.errors[k] = (this.errors[k] ?? 0) + 1;
      return;
    }
    this.client.push(ms);
    if (label !== undefined) {
      let s = this.labels.get(label);
      if (!s) this.labels.set(label, (s = new Samples()));
      s.push(ms);
    }
    if (parseServerTiming(a.timing, this.split)) {
      if (!Number.isNaN(this.split.queue)) {
        this.queue.push(this.split.queue);
        if (label !== undefined) {
          let q = this.labelQueues.get(label);
          if (!q) this.labelQueues.set(label, (q = new Samples()));
          q.push(this.split.queue);
        }
      }
      if (!Number.isNaN(this.split.compute)) this.compute.push(this.split.compute);
      if (!Number.isNaN(this.split.serialize)) this.serialize.push(this.split.serialize);
      if (!Number.isNaN(this.split.request)) this.request.push(this.split.request);
    }
    if (a.batchSize !== undefined) this.batchSizes[a.batchSize] = (this.batchSizes[a.batchSize] ?? 0) + 1;
  }
}

function inferPath(t: LoadTarget): string {
  const name = encodeURIComponent(t.model);
  return t.version === undefined
    ? `/v1/models/${name}/infer`
    : `/v1/models/${name}/versions/${t.version}/infer`;
}

/** Sends one request on the agent; never rejects (a failure is an Answer). */
function send(
  mod: typeof http | typeof https,
  agent: http.Agent,
  url: URL,
  path: string,
  key: string | null,
  r: LoadRequest,
): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Answer): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(a);
    };
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': typeof r.body === 'string' ? Buffer.byteLength(r.body) : r.body.byteLength,
      ...r.headers,
    };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const req = mod.request(
      { agent, method: 'POST', hostname: url.hostname, port: url.port, path, headers },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => {
          const timing = res.headers['server-timing'];
          const bs = res.headers['x-tandem-batch-size'];
          finish({
            status: res.statusCode ?? 0,
            timing: Array.isArray(timing) ? timing.join(', ') : timing,
            batchSize: Array.isArray(bs) ? bs[0] : bs,
          });
        });
        res.on('error', () => finish({ status: 'network', timing: undefined, batchSize: undefined }));
      },
    );
    const timer =
      r.abortAfterMs === undefined
        ? null
        : setTimeout(() => {
            finish({ status: 'aborted', timing: undefined, batchSize: undefined });
            req.destroy();
          }, r.abortAfterMs);
    req.on('error', () => finish({ status: 'network', timing: undefined, batchSize: undefined }));
    req.end(r.body);
  });
}

function split(s: Samples): SplitSummary {
  const x = s.summary();
  return { mean: x.mean, p99: x.p99 };
}

/** Runs one concurrency level: warm-up, then the measured window. */
export async function runLoad(target: LoadTarget, opts: LoadOptions): Promise<LoadReport> {
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'concurrency must be an integer >= 1', {
      field: 'concurrency',
    });
  }
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `not a URL: ${target.url}`, { field: 'url' });
  }
  const mod = url.protocol === 'https:' ? https : http;
  const agent = new mod.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const path = `${url.pathname.replace(/\/+$/, '')}${inferPath(target)}`;
  const rec = new Recorder();
  const t0 = performance.now();
  const measureFrom = t0 + 1000 * (opts.warmupSeconds ?? 1);
  const measureTo = measureFrom + 1000 * (opts.seconds ?? 5);
  const limit = opts.requests ?? Infinity;
  let next = 0;
  let started = 0; // measured requests sent
  let lastEnd = measureFrom;
  const client = async (): Promise<void> => {
    for (;;) {
      const now = performance.now();
      if (now >= measureTo) return;
      const measured = now >= measureFrom;
      if (measured && started >= limit) return;
      if (measured) started++;
      const r = opts.request(next++);
      const a = await send(mod, agent, url, path, target.key, r);
      const end = performance.now();
      if (measured) {
        rec.record(a, end - now, r.label);
        if (end > lastEnd) lastEnd = end;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.concurrency }, client));
  } finally {
    agent.destroy();
  }
  // Every recorded request ended by lastEnd (a request sent before measureTo may end after it).
  const seconds = Math.max(1e-9, (lastEnd - measureFrom) / 1000);
  const labels: Record<string, LatencySummary> = {};
  for (const [k, s] of rec.labels) labels[k] = s.summary();
  const labelQueues: Record<string, LatencySummary> = {};
  for (const [k, s] of rec.labelQueues) labelQueues[k] = s.summary();
  return {
    concurrency: opts.concurrency,
    requests: rec.requests,
    seconds,
    inferPerSec: rec.client.length / seconds,
    client: rec.client.summary(),
    server: {
      queue: split(rec.queue),
      compute: split(rec.compute),
      serialize: split(rec.serialize),
      request: split(rec.request),
    },
    batchSizes: rec.batchSizes,
    errors: rec.errors,
    labels,
    labelQueues,
  };
}

/** Runs each concurrency level in turn (perf_analyzer's sweep), reporting each as it finishes. */
export async function runSweep(
  target: LoadTarget,
  levels: readonly number[],
  opts: Omit<LoadOptions, 'concurrency'>,
  onLevel?: (r: LoadReport) => void,
): Promise<LoadReport[]> {
  const out: LoadReport[] = [];
  for (const concurrency of levels) {
    const r = await runLoad(target, { ...opts, concurrency });
    onLevel?.(r);
    out.push(r);
  }
  return out;
}

/**
 * Request bodies from a JSON input file: a full body ({inputs, priority?, timeoutMs?}), bare inputs
 * (wrapped as {inputs}), or an array of either (sent in turn).
 */
export function bodiesFromJson(json: unknown): string[] {
  const one = (x: unknown): string =>
    JSON.stringify(
      x !== null && typeof x === 'object' && !Array.isArray(x) && 'inputs' in x ? x : { inputs: x },
    );
  if (Array.isArray(json)) {
    if (json.length === 0) {
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'the input file holds an empty array', {
        field: 'input',
      });
    }
    return json.map(one);
  }
  return [one(json)];
}
