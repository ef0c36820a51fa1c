/**
 * How fast a cancel and a deadline take effect on running option, var and md jobs (issue 19): the service
 * in-process on the real CPU runtime, each job far too big to finish (an option of 2^40 paths, var of
 * 2^24 scenarios, md of 10^9 steps). For each run: submit, wait until the job has finished two tasks,
 * POST /v1/jobs/:id/cancel, and time until its 'cancelled' outcome is committed; beside it the longest
 * task the job ran (the target is 100 ms + one task). Then the same jobs with timeoutSeconds: the time
 * from the deadline to the committed DEADLINE_EXCEEDED failure (the deadline sweep runs every 50 ms).
 * Before this change neither took effect until the job had run to its end (hours on a CPU).
 * Usage: node dist/bench/cancel-latency.js [--runs 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Observer, TaskEvent } from '../src/obs/observer.js';
import { loadServiceConfig } from '../src/service/config.js';
import { openRuntime } from '../src/service/server.js';
import { createService } from '../src/service/service.js';
import { EXAMPLE_PORTFOLIO } from '../src/workloads/risk/params.js';
import { quantile } from './quantile.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Math.max(1, Number(values.runs));

const JOBS: Record<string, { type: string; params: Record<string, unknown> }> = {
  option: { type: 'option', params: { paths: 2 ** 40, device: 'cpu' } },
  var: { type: 'var', params: { portfolio: EXAMPLE_PORTFOLIO, scenarios: 2 ** 24, device: 'cpu' } },
  md: { type: 'md', params: { cells: 8, steps: 1e9, thermoEvery: 1e9, device: 'cpu' } },
};

const dir = mkdtempSync(join(tmpdir(), 'tandem-cancel-bench-'));
const cfg = loadServiceConfig(
  {},
  {
    dataDir: dir,
    logLevel: 'silent',
    durability: 'normal',
    runtime: {
      enabled: true,
      backends: ['cpu'],
      cpuThreads: 1,
      calibrate: false,
      cacheDir: join(dir, 'cache'),
    },
  },
);
const { rt, reason } = await openRuntime(cfg);
if (!rt || rt.devices.length === 0) {
  console.log(`skipped: no CPU runtime (${reason})`);
  process.exit(0);
}
/** Task durations (ms) per job id. */
const tasks = new Map<string, number[]>();
const observer: Observer = {
  onTaskEnd(e: TaskEvent) {
    const job = e.tags?.['job'];
    if (!job) return;
    let list = tasks.get(job);
    if (!list) tasks.set(job, (list = []));
    list.push((e.endUs - e.startUs) / 1000);
  },
};
rt.addObserver(observer);
const svc = await createService(cfg, { runtime: rt, ownsRuntime: true });
const headers = { authorization: `Bearer ${svc.bootstrapKey?.key ?? ''}` };
const finished = new Map<string, (state: string) => void>();
svc.dispatcher.onJobFinished((id, read) => finished.get(id)?.(read()?.state ?? 'unknown'));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function submit(job: { type: string; params: object }, timeoutSeconds?: number): Promise<string> {
  const res = await svc.app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers,
    payload: { ...job, ...(timeoutSeconds ? { timeoutSeconds } : {}) },
  });
  if (res.statusCode !== 202) throw new Error(`submit: ${res.statusCode} ${res.body}`);
  return (res.json() as { id: string }).id;
}

function outcome(id: string): Promise<{ state: string; at: number }> {
  return new Promise((resolve) => finished.set(id, (state) => resolve({ state, at: performance.now() })));
}

const fmt = (x: number): string => x.toFixed(1).padStart(8);
console.log(`runs per job: ${runs}; one CPU worker; times in ms`);
console.log('job     | cancel→cancelled p50      max | longest task p50 | deadline→failed p50      max');
for (const [name, job] of Object.entries(JOBS)) {
  const cancelMs: number[] = [];
  const longest: number[] = [];
  const deadlineMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const id = await submit(job);
    const done = outcome(id);
    for (let w = 0; (tasks.get(id)?.length ?? 0) < 2; w++) {
      if (w > 6000) throw new Error(`${name}: no task of job ${id} finished in 30 s`);
      await sleep(5);
    }
    await sleep(100);
    const t0 = performance.now();
    await svc.app.inject({ method: 'POST', url: `/v1/jobs/${id}/cancel`, headers });
    const o = await done;
    if (o.state !== 'cancelled') throw new Error(`${name}: ended ${o.state}`);
    cancelMs.push(o.at - t0);
    longest.push(Math.max(...(tasks.get(id) ?? [0])));

    const timed = await submit(job, 1);
    const failed = outcome(timed);
    const f = await failed;
    const deadlineAt = svc.store.get(timed)?.deadlineAt ?? 0;
    if (f.state !== 'failed') throw new Error(`${name}: timed job ended ${f.state}`);
    // performance.now() and Date.now() differ by a constant: map the deadline onto the former.
    deadlineMs.push(f.at - (deadlineAt - Date.now() + performance.now()));
  }
  const q = (xs: number[], p: number): number =>
    quantile(
      [...xs].sort((a, b) => a - b),
      p,
    );
  console.log(
    `${name.padEnd(7)} | ${fmt(q(cancelMs, 0.5))} ${fmt(Math.max(...cancelMs))} | ${fmt(q(longest, 0.5))}         | ${fmt(q(deadlineMs, 0.5))} ${fmt(Math.max(...deadlineMs))}`,
  );
}
await svc.close();
rmSync(dir, { recursive: true, force: true });
