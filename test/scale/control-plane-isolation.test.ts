/**
 * Issue 19 on the scaled-out control plane, against real PostgreSQL and Redis servers and a real agent
 * process: per-job deadlines (the agent stops the job and records TANDEM_ERR_DEADLINE_EXCEEDED; a job
 * whose time ran out before its re-run fails without running; the leader fails a running job no agent
 * will end), the leader lock (one replica does the singleton work; it moves when the holder's lock
 * connection dies or the holder closes), and load shedding at admission from the cluster's backlog
 * (429 + Retry-After, per tenant by weight, seen by every replica).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { DEFAULT_CONFIG, DEFAULT_HARDWARE_RULES } from '../../src/service/config.js';
import { registerBuiltinJobTypes } from '../../src/service/jobs/builtin.js';
import { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { BullQueue } from '../../src/service/queue/bullmq-queue.js';
import { pgClusterLoadSource } from '../../src/service/queue/cluster-backlog.js';
import { buildControlPlane, type ControlPlane } from '../../src/service/queue/control-plane.js';
import { LeaderDuties } from '../../src/service/queue/leader-duties.js';
import { PgAdvisoryLock } from '../../src/service/queue/leader-lock.js';
import { PgJobStore } from '../../src/service/store/pg-store.js';
import { spawnAgent, startPostgres, startRedis, type Server } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r = await startRedis();
const p = r.ok ? await startPostgres() : r;
const skip = !r.ok ? r.reason : !p.ok ? p.reason : false;
if (skip) console.log(`# skip control-plane isolation tests: ${skip}`);

let redis: Server;
let pgs: Server;
after(async () => {
  await redis?.stop();
  await pgs?.stop();
});

interface Job {
  id: string;
  state: string;
  timeoutSeconds: number | null;
  deadline: string | null;
  runSeconds: number | null;
  error: { code: string; message: string } | null;
}

const GRACE_MS = 300;

async function openPlane(
  pgUrl: string,
  prefix: string,
  shed?: { backlog: number },
): Promise<{ cp: ControlPlane; store: PgJobStore; close(): Promise<void> }> {
  const store = await PgJobStore.open(pgUrl, 4);
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
    weights: new Map([['bob', 3]]),
    reconcileMs: 500,
    bodyLimitBytes: 65536,
    load: pgClusterLoadSource(store),
    lock: new PgAdvisoryLock(pgUrl, prefix),
    config: {
      deadlineGraceMs: GRACE_MS,
      shed: shed
        ? { ...DEFAULT_CONFIG.shed, minBacklog: shed.backlog, maxBacklog: shed.backlog }
        : DEFAULT_CONFIG.shed,
    },
  });
  return {
    cp,
    store,
    async close() {
      await cp.close();
      await queue.close();
      await store.close();
    },
  };
}

const headers = (tenant: 'alice' | 'bob') => ({ authorization: `Bearer k-${tenant}` });
const submit = (cp: ControlPlane, tenant: 'alice' | 'bob', body: object) =>
  cp.app.inject({ method: 'POST', url: '/v1/jobs', headers: headers(tenant), payload: body });
const getJob = async (cp: ControlPlane, id: string) =>
  (await cp.app.inject({ url: `/v1/jobs/${id}`, headers: headers('alice') })).json<Job>();

async function until(cp: ControlPlane, id: string, want: (j: Job) => boolean, ms: number): Promise<Job> {
  const t0 = Date.now();
  for (;;) {
    const j = await getJob(cp, id);
    if (want(j)) return j;
    if (Date.now() - t0 > ms) assert.fail(`job ${id} is ${j.state} after ${ms} ms`);
    await sleep(25);
  }
}

describe('scaled-out control plane: deadlines and the leader lock', { skip }, () => {
  let plane: Awaited<ReturnType<typeof openPlane>>;
  let agent: ChildProcess;
  const prefix = 'iso';

  before(async () => {
    if (!r.ok || !p.ok) return;
    redis = r.server;
    pgs = p.server;
    plane = await openPlane(pgs.url, prefix);
    process.env['TANDEM_DEADLINE_GRACE_MS'] = String(GRACE_MS);
    agent = await spawnAgent(redis.url, pgs.url, 'iso-agent', prefix, ['--concurrency', '4']);
  });
  after(async () => {
    agent?.kill('SIGKILL');
    await plane?.close();
  });

  it('stops a running job at its deadline and records TANDEM_ERR_DEADLINE_EXCEEDED', async (ctx) => {
    const res = await submit(plane.cp, 'alice', {
      type: 'sleep',
      params: { ms: 60_000, steps: 600 },
      timeoutSeconds: 1,
    });
    assert.equal(res.statusCode, 202);
    const id = res.json<{ id: string }>().id;
    const running = await until(plane.cp, id, (j) => j.state === 'running', 10_000);
    assert.equal(running.timeoutSeconds, 1);
    assert.ok(running.deadline, 'the deadline is set at the first start');
    const done = await until(plane.cp, id, (j) => j.state !== 'running', 5000);
    assert.equal(done.state, 'failed');
    assert.equal(done.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
    // Stopped at its next step (100 ms) after 1 s, not after its 60 s.
    ctx.diagnostic(`timeoutSeconds 1: failed after ${done.runSeconds} s of run`);
    assert.ok(done.runSeconds! < 2, `ran ${done.runSeconds} s`);
  });

  it('gives a job its type default and refuses a budget above the tenant maximum', async () => {
    const ok = await submit(plane.cp, 'alice', { type: 'sleep', params: { ms: 10 } });
    assert.equal(ok.json<Job>().timeoutSeconds, 120); // sleep's defaultTimeoutSeconds
    const tooLong = await submit(plane.cp, 'alice', { type: 'sleep', timeoutSeconds: 10 * 24 * 3600 });
    assert.equal(tooLong.statusCode, 400);
    assert.equal(tooLong.json<{ error: { code: string } }>().error.code, 'TANDEM_ERR_LIMIT');
  });

  it('fails without running a re-delivered job whose time ran out on an earlier attempt', async () => {
    const [ins] = await plane.store.insertMany([
      {
        tenantId: 'alice',
        type: 'sleep',
        params: { ms: 30_000 },
        priority: 0,
        jobClass: 'latency',
        memBytes: 0,
        idempotencyKey: null,
        timeoutMs: 1000,
      },
    ]);
    assert.ok(ins?.ok);
    const id = ins.job.id;
    // An earlier attempt on an agent that died, started 2 s ago: its 1 s budget is spent.
    await plane.store.startAttempt(id, 'dead-agent', Date.now() - 2000);
    const queue = await BullQueue.open({ url: redis.url, prefix });
    await queue.add([{ id, deviceClass: 'cpu', priority: 0, memBytes: 0, data: { type: 'sleep' } }]);
    await queue.close();
    const done = await until(plane.cp, id, (j) => j.state !== 'running', 10_000);
    assert.equal(done.state, 'failed');
    assert.equal(done.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
    assert.match(done.error?.message ?? '', /ran out before this attempt started/);
    const attempts = await plane.store.attempts(id);
    assert.equal(attempts.at(-1)?.agent, 'iso-agent');
  });

  it('the leader fails a running job past its deadline that no agent will end', async () => {
    const [ins] = await plane.store.insertMany([
      {
        tenantId: 'alice',
        type: 'sleep',
        params: { ms: 30_000 },
        priority: 0,
        jobClass: 'latency',
        memBytes: 0,
        idempotencyKey: null,
        timeoutMs: 1000,
      },
    ]);
    assert.ok(ins?.ok);
    // Running on an agent that is gone, and in no queue: nothing else would ever end it.
    await plane.store.startAttempt(ins.job.id, 'vanished-agent');
    await plane.cp.duties.tick(Date.now() + 60_000); // as if a minute had passed
    const j = await until(plane.cp, ins.job.id, (x) => x.state !== 'running', 5000);
    assert.equal(j.state, 'failed');
    assert.equal(j.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
    assert.match(j.error?.message ?? '', /failed by the control plane/);
  });

  it('one replica holds the leader lock; it moves when the holder loses its connection or closes', async (ctx) => {
    const health = (await plane.cp.app.inject({ url: '/healthz' })).json<{ leader: boolean }>();
    assert.equal(health.leader, true, 'the only replica of its prefix leads');
    // Two replicas' duties on a lock of their own, ticked by hand (no timers racing the test).
    const replica = () =>
      new LeaderDuties({
        store: plane.store,
        placeDeps: () => Promise.reject(new Error('not reconciling in this test')),
        reconcileMs: 3_600_000,
        deadlineGraceMs: GRACE_MS,
        lock: new PgAdvisoryLock(pgs.url, 'lock-test'),
      });
    const one = replica();
    const two = replica();
    const admin = new pg.Client({ connectionString: pgs.url });
    await admin.connect();
    const holders = async () =>
      (
        await admin.query<{ pid: number }>(
          `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = hashtext('lock-test')::oid`,
        )
      ).rows.map((x) => x.pid);
    try {
      await one.tick();
      await two.tick();
      assert.deepEqual([one.leader, two.leader], [true, false]);
      const [first] = await holders();
      assert.ok(first, 'one advisory lock is held');
      // The holder's lock session is killed (a network cut, a PostgreSQL failover): the other takes over.
      await admin.query('SELECT pg_terminate_backend($1)', [first]);
      const t0 = Date.now();
      while (!two.leader && Date.now() - t0 < 5000) {
        await two.tick();
        await sleep(20);
      }
      assert.equal(two.leader, true, 'the second replica took over');
      ctx.diagnostic(`after the holder's session was killed, the other replica led in ${Date.now() - t0} ms`);
      await one.tick();
      assert.equal(one.leader, false, 'the first stepped down');
      assert.equal((await holders()).length, 1);
      // The leader closes: its lock goes with its connection, the other takes it at its next tick.
      await two.stop();
      await one.tick();
      assert.equal(one.leader, true);
      assert.equal((await holders()).length, 1);
    } finally {
      await one.stop();
      await two.stop();
      await admin.end();
    }
  });
});

describe('scaled-out control plane: load shedding from the cluster backlog', { skip }, () => {
  let a: Awaited<ReturnType<typeof openPlane>>;
  let b: Awaited<ReturnType<typeof openPlane>>;
  const BUDGET = 40;

  before(async () => {
    if (!r.ok || !p.ok) return;
    redis ??= r.server;
    pgs ??= p.server;
    // A database of its own: the backlog is the whole job table's, and no agent drains this prefix.
    const admin = new pg.Client({ connectionString: pgs.url });
    await admin.connect();
    await admin.query('CREATE DATABASE shed');
    await admin.end();
    const url = pgs.url.replace(/\/postgres$/, '/shed');
    a = await openPlane(url, 'shed', { backlog: BUDGET });
    b = await openPlane(url, 'shed', { backlog: BUDGET });
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  it('refuses a flooding tenant with 429 + Retry-After, not a tenant under its share, on every replica', async () => {
    const job = { type: 'sleep', params: { ms: 10 } };
    const accepted: string[] = [];
    let refused = null as null | { status: number; retryAfter: string | undefined; body: unknown };
    for (let i = 0; i < BUDGET + 20; i++) {
      const res = await submit(a.cp, 'alice', job);
      if (res.statusCode === 202) accepted.push(res.json<{ id: string }>().id);
      else
        refused ??= {
          status: res.statusCode,
          retryAfter: res.headers['retry-after'] as string,
          body: res.json(),
        };
    }
    // No job drains (no agent): the budget is the floor; alice alone may hold all of it.
    assert.equal(accepted.length, BUDGET);
    assert.equal(refused?.status, 429);
    assert.ok(Number(refused?.retryAfter) >= 1, `Retry-After ${refused?.retryAfter}`);
    const err = (refused?.body as { error: { code: string; details: { reason: string } } }).error;
    assert.equal(err.code, 'TANDEM_ERR_OVERLOADED');
    assert.equal(err.details.reason, 'backlog');

    // Bob (weight 3) is under his share (3/4 of the budget): alice's flood does not refuse him.
    await a.cp.pollLoad();
    await sleep(300); // a shedder window: the tenants' shares are refreshed
    for (let i = 0; i < 20; i++) assert.equal((await submit(a.cp, 'bob', job)).statusCode, 202);
    assert.equal((await submit(a.cp, 'alice', job)).statusCode, 429);

    // The other replica sees the same backlog in PostgreSQL: alice is refused there too, bob is not.
    await b.cp.pollLoad();
    await sleep(300);
    assert.equal((await submit(b.cp, 'alice', job)).statusCode, 429);
    assert.equal((await submit(b.cp, 'bob', job)).statusCode, 202);
    const health = (await b.cp.app.inject({ url: '/healthz' })).json<{
      load: { backlog: number; backlogBudget: number; shedding: boolean };
    }>();
    assert.equal(health.load.backlogBudget, BUDGET);
    assert.ok(health.load.backlog >= BUDGET + 20, `backlog ${health.load.backlog}`);
    assert.equal(health.load.shedding, true);

    // Alice's queue drains (cancelled here): she is admitted again.
    for (const id of accepted.slice(0, 30))
      await a.cp.app.inject({ method: 'POST', url: `/v1/jobs/${id}/cancel`, headers: headers('alice') });
    await a.cp.pollLoad();
    await sleep(300);
    assert.equal((await submit(a.cp, 'alice', job)).statusCode, 202);
  });
});
