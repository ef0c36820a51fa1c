/**
 * What the dashboard's polling costs the service, side by side with the alternative in one run:
 *   history  one history sample (DeviceHistory.record, 8 devices) and GET /v1/devices/history full
 *            (900 samples × 8 devices) and incremental (?since= the last poll: one new sample), through
 *            Fastify's inject (no socket) on an app with the history route alone, with the answer's size
 *   list     a page of 20 of N jobs (?type=gemm, a third of them): without a total (the list as before, and
 *            every dashboard poll), with the total counted up to 10,000 (?total=true: when the filters
 *            change), and with an uncapped COUNT(*) (the alternative)
 * Usage: node dist/bench/dashboard-api.js [--jobs 200000] [--runs 200]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { historyRoutes } from '../src/service/http/routes/history.js';
import { loadServiceConfig } from '../src/service/config.js';
import { DeviceHistory, type DeviceSample } from '../src/service/obs/device-history.js';
import { createService } from '../src/service/service.js';
import type { NewJob } from '../src/service/store/job-store.js';
import { quantile } from './quantile.js';

const { values } = parseArgs({
  options: { jobs: { type: 'string', default: '200000' }, runs: { type: 'string', default: '200' } },
});
const JOBS = Number(values.jobs);
const RUNS = Number(values.runs);

function median(xs: number[]): number {
  return quantile(xs, 0.5);
}

async function timeIt(runs: number, f: () => Promise<unknown> | unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await f();
    out.push(performance.now() - t0);
  }
  return out;
}

const fmt = (ms: number): string => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-bench-dash-'));
  const config = loadServiceConfig({}, { dataDir: dir, logLevel: 'silent', durability: 'normal' });
  const svc = await createService(config, { runtime: null });
  const auth = { authorization: `Bearer ${svc.bootstrapKey!.key}` };
  try {
    // history: the service's own history swapped for a full one of 8 devices.
    const devices: DeviceSample[] = Array.from({ length: 8 }, (_, i) => ({
      id: `cuda${i}`,
      kind: 'cuda',
      name: 'H200',
      memoryBytes: 141e9,
      utilization: 0.5,
      memoryUsed: 1e9,
      inflight: 3,
    }));
    const hist = new DeviceHistory(1000, 900);
    let now = Date.now() - 900_000;
    const record = () => hist.record((now += 1000), { devices, queued: 12, running: 4 });
    for (let i = 0; i < 900; i++) record();
    const recordMs = await timeIt(RUNS * 50, record);
    // The route alone on an app of its own (its schema-driven serialization included, auth not).
    const app = Fastify();
    await app.register(historyRoutes(hist));
    const ownWork = await timeIt(RUNS, () => JSON.stringify(hist.read()));
    const full = await app.inject({ url: '/v1/devices/history' });
    const fullMs = await timeIt(RUNS, () => app.inject({ url: '/v1/devices/history' }));
    const since = now - 1000;
    const incr = await app.inject({ url: `/v1/devices/history?since=${since}` });
    const incrMs = await timeIt(RUNS, () => app.inject({ url: `/v1/devices/history?since=${since}` }));
    await app.close();
    console.log(`history (8 devices, 900 samples kept), ${RUNS} requests each, medians:`);
    console.log(`  one sample recorded                 ${fmt(median(recordMs))}`);
    console.log(`  read + JSON.stringify, full         ${fmt(median(ownWork))}`);
    console.log(`  GET full history                    ${fmt(median(fullMs))}  (${full.body.length} bytes)`);
    console.log(`  GET ?since=<last poll> (1 sample)   ${fmt(median(incrMs))}  (${incr.body.length} bytes)`);

    // list: N jobs of 2 types over 2 tenants, inserted in batches.
    const tenant = svc.tenants.list()[0]!.id;
    const batch: NewJob[] = [];
    for (let i = 0; i < JOBS; i++) {
      batch.push({
        tenantId: tenant,
        type: i % 3 === 0 ? 'gemm' : 'sleep',
        params: { ms: 1 },
        priority: 0,
        jobClass: 'batch',
        memBytes: 0,
        idempotencyKey: null,
      });
      if (batch.length === 5000) svc.store.insertMany(batch.splice(0));
    }
    if (batch.length) svc.store.insertMany(batch.splice(0));
    const q = { tenantId: null, type: 'gemm' };
    const listOnly = await timeIt(RUNS, () => svc.store.list({ ...q, limit: 20 }));
    const capped = await timeIt(RUNS, () => {
      svc.store.list({ ...q, limit: 20 });
      return svc.store.count(q);
    });
    const uncapped = await timeIt(RUNS, () => {
      svc.store.list({ ...q, limit: 20 });
      return svc.store.count(q, Number.MAX_SAFE_INTEGER);
    });
    const route = await timeIt(RUNS, () =>
      svc.app.inject({ url: '/v1/jobs?limit=20&type=gemm', headers: auth }),
    );
    const routeTotal = await timeIt(RUNS, () =>
      svc.app.inject({ url: '/v1/jobs?limit=20&type=gemm&total=true', headers: auth }),
    );
    console.log(
      `list of 20, ?type=gemm on ${JOBS} jobs (${Math.ceil(JOBS / 3)} gemm), ${RUNS} runs, medians:`,
    );
    console.log(`  store: page only (no total)         ${fmt(median(listOnly))}`);
    console.log(`  store: page + total capped at 10000 ${fmt(median(capped))}`);
    console.log(`  store: page + uncapped COUNT(*)     ${fmt(median(uncapped))}`);
    console.log(`  GET /v1/jobs?limit=20&type=gemm     ${fmt(median(route))}`);
    console.log(`  GET ... &total=true                 ${fmt(median(routeTotal))}`);
  } finally {
    await svc.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
