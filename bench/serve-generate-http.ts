/**
 * The HTTP half of bench/serve-generate.ts: the same requests through `POST /v1/completions` (streamed,
 * token-id prompts) on a loopback Fastify service with Tandem's HTTP base, all sent at once; time to
 * first token is the first SSE chunk's arrival.
 */
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

export async function runOverHttp(rt: Runtime, model: ServedModel, reqs: RequestSet): Promise<RunFigures> {
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
    await Promise.all(
      [0, 1, 2, 3].map((i) => streamOne(url, { ...body(i), max_tokens: 4 }, performance.now())),
    );
    const t0 = performance.now();
    const out = await Promise.all(reqs.prompts.map((_, i) => streamOne(url, body(i), t0)));
    const wallS = (performance.now() - t0) / 1000;
    return { tokens: out.reduce((s, o) => s + o.tokens, 0), wallS, ttftMs: out.map((o) => o.ttft) };
  } finally {
    await app.close();
  }
}
