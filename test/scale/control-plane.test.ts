/**
 * The scaled-out control plane through inject(): keys, submit → an agent process runs it → result with
 * its attempt log; a job no agent can fit is held with the reason in the API; and Redis killed and
 * restarted empty mid-work: agents reconnect, the reconciler re-adds what Redis lost, no job is lost.
 */
import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { BullQueue } from '../../src/service/queue/bullmq-queue.js';
import { buildControlPlane, type ControlPlane } from '../../src/service/queue/control-plane.js';
import { DEFAULT_HARDWARE_RULES } from '../../src/service/config.js';
import { registerBuiltinJobTypes } from '../../src/service/jobs/builtin.js';
import { defineJobType } from '../../src/service/jobs/job-type.js';
import { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { PgJobStore } from '../../src/service/store/pg-store.js';
import { jobsApiSuite } from '../service/jobs-api-suite.js';
import { spawnAgent, startPostgres, startRedis, type Server } from './harness.js';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');
const run = promisify(execFile);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r = await startRedis();
const p = r.ok ? await startPostgres() : r;
const skip = !r.ok ? r.reason : !p.ok ? p.reason : false;
if (skip) console.log(`# skip control plane tests: ${skip}`);

// Module-level: the Redis test below restarts Redis, and every suite in this file shares both servers.
let redis: Server;
let pgs: Server;
after(async () => {
  await redis?.stop();
  await pgs?.stop();
});

describe('scaled-out control plane', { skip }, () => {
  let store: PgJobStore;
  let queue: BullQueue;
  let cp: ControlPlane;
  const agents: ChildProcess[] = [];
  const prefix = 'cp';
  const auth = { authorization: 'Bearer k-alice' };

  before(async () => {
    if (!r.ok || !p.ok) return;
    redis = r.server;
    pgs = p.server;
    store = await PgJobStore.open(pgs.url);
    queue = await BullQueue.open({ url: redis.url, prefix });
    const registry = new JobTypeRegistry();
    await registerBuiltinJobTypes(registry);
    registry.register(
      defineJobType<Record<string, never>>({
        name: 'huge',
        description: 'needs more device memory than any agent has',
        paramsSchema: { type: 'object' },
        parse: () => ({}),
        memoryBytes: () => 2 ** 52,
        jobClass: () => 'latency',
        run: () => Promise.resolve(null),
      }),
    );
    cp = await buildControlPlane({
      store,
      queue,
      registry,
      prefix,
      rules: DEFAULT_HARDWARE_RULES,
      keys: new Map([['k-alice', 'alice']]),
      reconcileMs: 500,
      bodyLimitBytes: 65536,
    });
    agents.push(await spawnAgent(redis.url, pgs.url, 'cp-agent', prefix, ['--concurrency', '8']));
  });
  after(async () => {
    for (const a of agents) a.kill('SIGKILL');
    await cp?.close();
    await queue?.close();
    await store?.close();
  });

  const submit = (body: unknown) =>
    cp.app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: body as object });
  const get = async (id: string) =>
    (await cp.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: auth })).json<{
      state: string;
      message: string;
      held: boolean;
      attempts: unknown[];
    }>();
  async function until(id: string, state: string, ms: number) {
    const t0 = Date.now();
    for (;;) {
      const j = await get(id);
      if (j.state === state) return j;
      if (Date.now() - t0 > ms) assert.fail(`job ${id} is ${j.state} after ${ms} ms, wanted ${state}`);
      await sleep(50);
    }
  }

  it('refuses a missing key and an unknown type with catalogue errors', async () => {
    const noKey = await cp.app.inject({ method: 'POST', url: '/v1/jobs', payload: { type: 'sleep' } });
    assert.equal(noKey.statusCode, 401);
    assert.equal(noKey.json<{ error: { code: string } }>().error.code, 'TANDEM_ERR_UNAUTHORIZED');
    const unknown = await submit({ type: 'nope' });
    assert.equal(unknown.statusCode, 400);
  });

  it('runs a submitted job on an agent and returns its result and attempt log', async () => {
    const res = await submit({ type: 'sleep', params: { ms: 20 } });
    assert.equal(res.statusCode, 202);
    const id = res.json<{ id: string }>().id;
    const done = await until(id, 'succeeded', 15_000);
    const result = await cp.app.inject({ url: `/v1/jobs/${id}/result`, headers: auth });
    assert.deepEqual(result.json(), { id, result: { sleptMs: 20, steps: 1 } });
    assert.equal(done.attempts.length, 1);
  });

  it('exports the autoscaling signal on /metrics', async () => {
    const text = (await cp.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(text, /tandem_autoscale_desired_agents\{device_class="cpu"\} \d+/);
    assert.match(text, /tandem_autoscale_agents\{device_class="cpu"\} 1/);
  });

  it('holds a job no agent can fit, with the reason visible', async () => {
    const res = await submit({ type: 'huge' });
    const id = res.json<{ id: string }>().id;
    const j = await get(id);
    assert.equal(j.state, 'queued');
    assert.equal(j.held, true);
    assert.match(j.message, /no live agent with a cpu device fits/);
    await sleep(700); // a reconcile pass keeps it held, not dropped
    assert.equal((await get(id)).held, true);
  });

  it('loses nothing when Redis dies and comes back empty mid-work', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await submit({ type: 'sleep', params: { ms: 300 } })).json<{ id: string }>().id);
    await sleep(400);
    const port = Number(new URL(redis.url).port);
    await redis.stop();
    await sleep(1000);
    const again = await startRedis(port);
    assert.ok(again.ok, 'redis restarted');
    redis = again.server;
    for (const id of ids) await until(id, 'succeeded', 30_000);
  });
});

/** A control plane over the test's Redis and PostgreSQL with one agent running one job at a time. */
async function onePerTime(
  prefix: string,
): Promise<{ cp: ControlPlane; agent: ChildProcess; close(): Promise<void> }> {
  if (!r.ok || !p.ok) throw new Error('no servers');
  redis ??= r.server;
  pgs ??= p.server;
  const store = await PgJobStore.open(pgs.url);
  const queue = await BullQueue.open({ url: redis.url, prefix });
  const registry = new JobTypeRegistry();
  await registerBuiltinJobTypes(registry);
  const cp = await buildControlPlane({
    store,
    queue,
    registry,
    prefix,
    rules: DEFAULT_HARDWARE_RULES,
    keys: new Map([
      ['k-alice', 'alice'],
      ['k-bob', 'bob'],
    ]),
    reconcileMs: 500,
    bodyLimitBytes: 65536,
  });
  const agent = await spawnAgent(redis.url, pgs.url, `${prefix}-agent`, prefix, ['--concurrency', '1']);
  return {
    cp,
    agent,
    async close() {
      agent.kill('SIGKILL');
      await cp.close();
      await queue.close();
      await store.close();
    },
  };
}

// The same route tests as the single node's (test/service/routes.test.ts).
jobsApiSuite(
  'scaled out (PostgreSQL + BullMQ + agent)',
  async () => {
    const { cp, close } = await onePerTime('contract');
    return { inject: (req) => cp.app.inject(req), alice: 'k-alice', bob: 'k-bob', close };
  },
  { skip },
);

void it(
  'tandem submit --wait (result), status, cancel and trace work against the control plane',
  { skip, timeout: 60_000 },
  async () => {
    const { cp, close } = await onePerTime('cli');
    const dir = mkdtempSync(join(tmpdir(), 'tandem-cp-cli-'));
    try {
      const url = await cp.app.listen({ host: '127.0.0.1', port: 0 });
      const env = { ...process.env, TANDEM_URL: url, TANDEM_KEY: 'k-alice' };
      const cli = async (...args: string[]) => (await run(process.execPath, [MAIN, ...args], { env })).stdout;
      const waited = JSON.parse(await cli('submit', 'sleep', '--param', 'ms=30', '--wait', '--json')) as {
        job: { id: string; state: string };
        result: { sleptMs: number };
      };
      assert.equal(waited.job.state, 'succeeded');
      assert.equal(waited.result.sleptMs, 30);
      assert.match(await cli('status', waited.job.id), /succeeded/);
      const long = JSON.parse(
        await cli('submit', 'sleep', '--param', 'ms=60000', '--param', 'steps=600', '--json'),
      ) as {
        id: string;
      };
      const cancelled = JSON.parse(await cli('cancel', long.id, '--json')) as { outcome: string };
      assert.ok(['cancelled', 'cancelling'].includes(cancelled.outcome), cancelled.outcome);
      const out = join(dir, 'trace.json');
      await cli('trace', waited.job.id, '-o', out);
      const trace = JSON.parse(readFileSync(out, 'utf8')) as { traceEvents: { name: string }[] };
      assert.ok(trace.traceEvents.some((e) => e.name === 'run sleep'));
    } finally {
      await close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

void it(
  'a cancel asked of a running job whose agent then died is committed by the reconciler',
  { skip, timeout: 30_000 },
  async () => {
    const { cp, agent, close } = await onePerTime('orphan');
    const headers = { authorization: 'Bearer k-alice' };
    try {
      const res = await cp.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers,
        payload: { type: 'sleep', params: { ms: 60_000, steps: 600 } },
      });
      const id = res.json<{ id: string }>().id;
      const state = async () =>
        (await cp.app.inject({ url: `/v1/jobs/${id}`, headers })).json<{
          state: string;
          error: { message: string } | null;
        }>();
      for (let i = 0; i < 300 && (await state()).state !== 'running'; i++) await sleep(20);
      agent.kill('SIGKILL');
      await new Promise((r) => agent.once('exit', r));
      const cancel = await cp.app.inject({ method: 'POST', url: `/v1/jobs/${id}/cancel`, headers });
      assert.equal(cancel.json<{ outcome: string }>().outcome, 'cancelling');
      let j = await state();
      for (let i = 0; i < 200 && j.state === 'running'; i++, j = await state()) await sleep(50);
      assert.equal(j.state, 'cancelled');
      assert.match(j.error?.message ?? '', /its agent orphan-agent is gone/);
    } finally {
      await close();
    }
  },
);
