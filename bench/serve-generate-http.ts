/**
 * The HTTP half of bench/serve-generate.ts: the same requests through `POST /v1/completions` (streamed,
 * token-id prompts) on a loopback Fastify service with Tandem's HTTP base, all sent at once; time to
 * first token is the first SSE chunk's arrival. The clients run in a worker thread (as a real client is
 * another process): 256 streaming fetches on the server's own event loop measured the client's chunk
 * parsing as the server's time (B.8 over HTTP was 3.3× slower than in-process on a CPU toy model).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Runtime } from '../src/runtime/runtime.js';
import type { Tenant } from '../src/service/auth/tenants.js';
import { createHttpApp } from '../src/service/http/http-app.js';
import { completionsRoutes } from '../src/service/http/routes/completions.js';
import type { ServedModel } from '../src/service/serving/model.js';

const KEY = 'bench-key';
const TENANT: Tenant = {
  id: 'bench',
  name: 'bench',
  role: 'user',
  weight: 1,
  maxConcurrentJobs: 1000,
  maxDeviceMemoryBytes: 2 ** 40,
  maxQueuedJobs: 100000,
  maxTimeoutSeconds: 3600,
  createdAt: 0,
};

export interface RequestSet {
  readonly prompts: number[][];
  readonly maxNew: number[];
}

export interface RunFigures {
  readonly tokens: number;
  readonly wallS: number;
  readonly ttftMs: number[];
}

/** One streamed completion: resolves with its first-chunk time (from `t0`) and its completion tokens. */
async function streamOne(url: string, body: unknown, t0: number): Promise<{ ttft: number; tokens: number }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  if (!res.ok || res.body === null) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let ttft = -1;
  let tokens = 0;
  let buf = '';
  const decoder = new TextDecoder();
  for await (const part of res.body) {
    if (ttft < 0) ttft = performance.now() - t0;
    buf += decoder.decode(part as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const msg = JSON.parse(event.slice(6)) as { usage?: { completion_tokens: number }; error?: unknown };
      if (msg.error !== undefined) throw new Error(JSON.stringify(msg.error));
      if (msg.usage !== undefined) tokens = msg.usage.completion_tokens;
    }
  }
  return { ttft, tokens };
}

interface ClientJob {
  /** Marks the worker data as ours (other workers importing this module run nothing). */
  readonly tandemGenerateClients: true;
  readonly url: string;
  readonly bodies: readonly unknown[];
  readonly warmup: readonly unknown[];
}

/** One client thread's share: its first-token times (from the shared start) and its wall-clock end. */
interface ClientShare {
  readonly tokens: number;
  readonly ttftMs: number[];
  /** performance.timeOrigin + now() at the thread's start and when its last stream ended. */
  readonly startAbs: number;
  readonly endAbs: number;
}

const absNow = (): number => performance.timeOrigin + performance.now();

/**
 * One client thread: its warm-up requests, 'ready', then on 'go' every body at once. The threads are
 * released together, so their requests arrive as one burst, as B.8 defines.
 */
async function runClients(job: ClientJob, port: NonNullable<typeof parentPort>): Promise<ClientShare> {
  await Promise.all(job.warmup.map((b) => streamOne(job.url, b, performance.now())));
  await new Promise<void>((go) => {
    port.once('message', () => go());
    port.postMessage('ready');
  });
  const startAbs = absNow();
  const t0 = performance.now();
  const out = await Promise.all(job.bodies.map((b) => streamOne(job.url, b, t0)));
  return {
    tokens: out.reduce((s, o) => s + o.tokens, 0),
    ttftMs: out.map((o) => o.ttft),
    startAbs,
    endAbs: absNow(),
  };
}

/**
 * The bodies spread over `threads` client threads (one Node thread parsing 256 SSE streams was the limit:
 * ~100 µs a chunk with undici's fetch), released together once all have warmed up; the wall time runs
 * from the first thread's start to the last stream's end.
 */
async function runClientsInWorkers(
  url: string,
  warmup: readonly unknown[],
  bodies: readonly unknown[],
  threads: number,
): Promise<RunFigures> {
  const n = Math.max(1, Math.min(threads, bodies.length));
  const workers = Array.from({ length: n }, (_, t) => {
    const job: ClientJob = {
      tandemGenerateClients: true,
      url,
      warmup: t === 0 ? warmup : [],
      bodies: bodies.filter((_, i) => i % n === t),
    };
    return new Worker(new URL(import.meta.url), { workerData: job });
  });
  const ready = workers.map(
    (w) => new Promise<void>((res, rej) => (w.once('message', () => res()), w.once('error', rej))),
  );
  const shares = workers.map(
    (w) =>
      new Promise<ClientShare>((res, rej) => {
        let share: ClientShare | null = null;
        w.on('message', (m: ClientShare | 'ready') => {
          if (m !== 'ready') share = m;
        });
        w.once('error', rej);
        w.once('exit', (code) =>
          share !== null
            ? res(share)
            : rej(new Error(`generation client worker exited with code ${code} and no figures`)),
        );
      }),
  );
  await Promise.all(ready);
  for (const w of workers) w.postMessage('go');
  const done = await Promise.all(shares);
  return {
    tokens: done.reduce((s, d) => s + d.tokens, 0),
    wallS: (Math.max(...done.map((d) => d.endAbs)) - Math.min(...done.map((d) => d.startAbs))) / 1000,
    ttftMs: done.flatMap((d) => d.ttftMs),
  };
}

export async function runOverHttp(
  rt: Runtime,
  model: ServedModel,
  reqs: RequestSet,
  clientThreads = 4,
): Promise<RunFigures> {
  const app = await createHttpApp({
    logLevel: 'silent',
    bodyLimitBytes: 1 << 20,
    requestTimeoutMs: 600_000,
    headersTimeoutMs: 60_000,
    keepAliveTimeoutMs: 60_000,
    rateLimitPerSec: 1e6,
    rateLimitBurst: 1e6,
    authenticate: (k) => (k === KEY ? TENANT : null),
    onError: () => undefined,
    openapi: { title: 'bench', description: 'generation' },
  });
  void rt;
  await app.register(completionsRoutes({ lookup: (n) => (n === model.name ? model : undefined) }));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `${address}/v1/completions`;
  try {
    const body = (i: number) => ({
      model: model.name,
      prompt: reqs.prompts[i],
      max_tokens: reqs.maxNew[i],
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    return await runClientsInWorkers(
      url,
      [0, 1, 2, 3].map((i) => ({ ...body(i), max_tokens: 4 })),
      reqs.prompts.map((_, i) => body(i)),
      clientThreads,
    );
  } finally {
    await app.close();
  }
}

const clientJob = isMainThread ? null : (workerData as Partial<ClientJob> | null);
if (clientJob?.tandemGenerateClients === true && parentPort !== null) {
  const port = parentPort;
  runClients(clientJob as ClientJob, port).then(
    (f) => port.postMessage(f),
    (e: unknown) => {
      throw e instanceof Error ? e : new Error(String(e));
    },
  );
}
