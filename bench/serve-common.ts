/**
 * The interactive-lane benches' scaffolding: a service started in this process (createService on a
 * runtime of the given backends, listening on loopback), models registered through the HTTP API as a
 * user would, the model's description read back, and a one-shot request helper.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadServiceConfig } from '../src/service/config.js';
import { createService, type Service } from '../src/service/service.js';
import type { LoadReport, LoadTarget } from '../src/service/client/load.js';
import { Runtime } from '../src/runtime/runtime.js';

export interface Lane {
  readonly svc: Service;
  readonly rt: Runtime;
  readonly url: string;
  readonly key: string;
  close(): Promise<void>;
  target(model: string): LoadTarget;
  /** POST/GET/DELETE with the admin key; the JSON answer and status. */
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown; headers: Headers }>;
  /** Registers a model version and waits until it is loaded (or fails with its error). */
  register(spec: Record<string, unknown>): Promise<void>;
  /** The model's queued and in-flight requests, summed over its versions (GET /v1/models/{name}). */
  slots(model: string): Promise<{ queued: number; inFlight: number; raw: unknown }>;
}

export async function startLane(backends: string[], cpuThreads?: number): Promise<Lane> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-serve-lane-'));
  const cfg = loadServiceConfig(
    { TANDEM_RATE_LIMIT: '100000000' },
    {
      dataDir: dir,
      logLevel: 'silent',
      durability: 'normal',
      port: 0,
      host: '127.0.0.1',
      runtime: {
        enabled: true,
        backends,
        cpuThreads: cpuThreads ?? Math.max(1, availableParallelism() - 1),
        calibrate: false,
        // The kernel cache a deployment keeps (TANDEM_CACHE_DIR, as the GPU scripts set it): with a
        // fresh one, NVRTC compiles of kernel variants first met under load fell inside measured windows.
        cacheDir: process.env['TANDEM_CACHE_DIR'] ?? join(dir, 'cache'),
      },
    },
  );
  // The runtime as openRuntime (server.ts) opens it, kept whole so the benches can price in-process too.
  const rt = await Runtime.create({
    backends: cfg.runtime.backends,
    calibrate: false,
    cacheDir: cfg.runtime.cacheDir,
    options: { cpu: { threads: cfg.runtime.cpuThreads, blasThreads: 1 } },
    log: () => undefined,
  });
  if (rt.devices.length === 0) {
    await rt.close();
    throw new Error(
      `no device opened: ${rt.backends.map((b) => `${b.kind}: ${b.reason ?? '-'}`).join('; ')}`,
    );
  }
  const svc = await createService(cfg, { runtime: rt, ownsRuntime: true });
  await svc.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  const key = svc.bootstrapKey?.key ?? '';
  const call: Lane['call'] = async (method, path, body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null, headers: res.headers };
  };
  const lane: Lane = {
    svc,
    rt,
    url,
    key,
    async close() {
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    },
    target: (model) => ({ url, key, model }),
    call,
    async register(spec) {
      const r = await call('POST', '/v1/models', spec);
      if (r.status !== 201 && r.status !== 200 && r.status !== 202)
        throw new Error(`register ${String(spec['name'])}: HTTP ${r.status} ${JSON.stringify(r.json)}`);
      // Loading may finish after the answer: poll the description until the version is ready.
      for (let i = 0; i < 600; i++) {
        const d = await call('GET', `/v1/models/${String(spec['name'])}`);
        const text = JSON.stringify(d.json);
        if (/"state":"(ready|loaded)"/.test(text)) return;
        if (/"state":"failed"/.test(text))
          throw new Error(`model ${String(spec['name'])} failed to load: ${text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`model ${String(spec['name'])} did not load in 60 s`);
    },
    async slots(model) {
      const d = await call('GET', `/v1/models/${model}`);
      let queued = 0;
      let inFlight = 0;
      // Summed wherever the description carries them (one entry per version).
      const walk = (x: unknown): void => {
        if (Array.isArray(x)) x.forEach(walk);
        else if (x !== null && typeof x === 'object') {
          const o = x as Record<string, unknown>;
          if (typeof o['queued'] === 'number') queued += o['queued'];
          if (typeof o['inFlight'] === 'number') inFlight += o['inFlight'];
          for (const [k, v] of Object.entries(o)) if (k !== 'stats') walk(v);
        }
      };
      walk(d.json);
      return { queued, inFlight, raw: d.json };
    },
  };
  return lane;
}

/** One infer request over a fresh fetch: status, batch size header and latency in ms. */
export async function inferOnce(
  lane: Lane,
  model: string,
  body: unknown,
): Promise<{ status: number; batchSize: number; ms: number; json: unknown }> {
  const t0 = performance.now();
  const res = await fetch(`${lane.url}/v1/models/${model}/infer`, {
    method: 'POST',
    headers: { authorization: `Bearer ${lane.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as unknown;
  return {
    status: res.status,
    batchSize: Number(res.headers.get('x-tandem-batch-size') ?? NaN),
    ms: performance.now() - t0,
    json,
  };
}

export const fmt = (x: number, d = 3): string => (Number.isFinite(x) ? x.toFixed(d) : '-');

/** One line per load level: throughput, client percentiles, the server split and the batch sizes. */
export function levelLine(label: string, r: LoadReport): string {
  const sizes = Object.entries(r.batchSizes)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  return (
    `${label} c${r.concurrency}: ${fmt(r.inferPerSec, 1)} infer/s, p50 ${fmt(r.client.p50)} p95 ${fmt(r.client.p95)} ` +
    `p99 ${fmt(r.client.p99)} ms; server queue ${fmt(r.server.queue.mean)} compute ${fmt(r.server.compute.mean)} ` +
    `(p99 ${fmt(r.server.compute.p99)}) serialize ${fmt(r.server.serialize.mean)} ms; batches ${sizes || '-'}` +
    (Object.keys(r.errors).length ? `; errors ${JSON.stringify(r.errors)}` : '')
  );
}
