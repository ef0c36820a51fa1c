/**
 * Agents on a real Redis and PostgreSQL: the PostgreSQL store's fencing, agent processes taking jobs, an
 * agent killed with -9 mid-job (its job re-run elsewhere within 5 s, committed once, the re-run counted),
 * a job no agent can fit held with a reason, and unreachable servers named in the error.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { RedisAgentRegistry } from '../../src/service/queue/heartbeat.js';
import { BullQueue } from '../../src/service/queue/bullmq-queue.js';
import { placeJobs } from '../../src/service/queue/placement.js';
import { PgJobStore } from '../../src/service/store/pg-store.js';
import { freePort, spawnAgent, startPostgres, startRedis, type Server } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const r = await startRedis();
const p = r.ok ? await startPostgres() : r;
const skip = !r.ok ? r.reason : !p.ok ? p.reason : false;
if (skip) console.log(`# skip agent tests: ${skip}`);

describe('agents on Redis + PostgreSQL', { skip }, () => {
  let redis: Server;
  let pgs: Server;
  let store: PgJobStore;
  let queue: BullQueue;
  const children: ChildProcess[] = [];
  const prefix = 'agents';

  before(async () => {
    if (!r.ok || !p.ok) return;
    redis = r.server;
    pgs = p.server;
    store = await PgJobStore.open(pgs.url);
    queue = await BullQueue.open({ url: redis.url, prefix });
  });
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await queue?.close();
    await store?.close();
    await redis?.stop();
    await pgs?.stop();
  });

  it('commits once per attempt: a stale attempt cannot overwrite, a final job is not restarted', async () => {
    const [o] = await store.insertMany([
      {
        tenantId: 't',
        type: 'sleep',
        params: { ms: 1 },
        priority: 0,
        jobClass: 'latency',
        memBytes: 0,
        idempotencyKey: null,
      },
    ]);
    assert.ok(o?.ok);
    const id = o.job.id;
    const a1 = await store.startAttempt(id, 'a');
    const a2 = await store.startAttempt(id, 'b');
    assert.equal(a1?.job.attempt, 1);
    assert.equal(a2?.rerun, true);
    assert.equal(await store.finish(id, 1, { state: 'succeeded', result: 'stale' }), false);
    assert.equal(await store.finish(id, 2, { state: 'succeeded', result: 'fresh' }), true);
    assert.equal(await store.finish(id, 2, { state: 'succeeded', result: 'again' }), false);
    assert.equal(await store.startAttempt(id, 'c'), null);
    assert.equal((await store.get(id))?.result, 'fresh');
    const log = await store.attempts(id);
    assert.deepEqual(
      log.map((a) => a.outcome),
      ['superseded', 'succeeded'],
    );
    const keyed = {
      tenantId: 't',
      type: 'sleep',
      params: { ms: 2 },
      priority: 0,
      jobClass: 'latency',
      memBytes: 0,
      idempotencyKey: 'k1',
    };
    const [k1] = await store.insertMany([keyed]);
    const [k2] = await store.insertMany([keyed]);
    assert.ok(k1?.ok && k2?.ok && !k2.created && k1.job.id === k2.job.id);
    const [k3] = await store.insertMany([{ ...keyed, params: { ms: 3 } }]);
    assert.ok(k3 && !k3.ok && k3.error.code === 'TANDEM_ERR_CONFLICT');
  });

  it('re-runs the job of an agent killed with -9 on another agent within 5 s, committed once', async () => {
    const a = await spawnAgent(redis.url, pgs.url, 'victim', prefix);
    children.push(a);
    const ins = await store.insertMany(
      Array.from({ length: 20 }, (_, i) => ({
        tenantId: 't',
        type: 'sleep',
        params: { ms: i === 0 ? 8000 : 10 },
        priority: i === 0 ? 10 : 0,
        jobClass: 'latency',
        memBytes: 0,
        idempotencyKey: null,
      })),
    );
    const jobs = ins.map((o) => (o.ok ? o.job : assert.fail('insert')));
    await queue.add(
      jobs.map((j) => ({ id: j.id, deviceClass: 'cpu', priority: j.priority, memBytes: 0, data: {} })),
    );
    const long = jobs[0]!.id;
    for (let i = 0; i < 200 && (await store.get(long))?.state !== 'running'; i++) await sleep(20);
    // The rescuer is up before the kill, so the figure is detection + re-run, not process start-up.
    const b = await spawnAgent(redis.url, pgs.url, 'rescuer', prefix);
    children.push(b);
    assert.equal((await store.get(long))?.state, 'running');
    a.kill('SIGKILL');
    const killedAt = Date.now();
    for (let i = 0; i < 300; i++) {
      const s = await store.stats();
      if (s.counts.succeeded >= 1 + jobs.length) break;
      await sleep(50);
    }
    for (const j of jobs) assert.equal((await store.get(j.id))?.state, 'succeeded', j.id);
    const log = await store.attempts(long);
    assert.equal(log.filter((x) => x.outcome === 'succeeded').length, 1);
    assert.ok(log.some((x) => x.agent === 'victim' && x.outcome === 'lost'));
    const rerun = log.find((x) => x.agent === 'rescuer')!;
    const recovery = rerun.startedAt - killedAt;
    console.log(
      `# killed agent's job re-run after ${recovery} ms; attempts ${log.map((x) => `${x.agent}:${x.outcome}`).join(' ')}`,
    );
    assert.ok(recovery <= 5000, `recovery ${recovery} ms`);
    assert.ok((await store.stats()).duplicateExecutions >= 1);
  });

  it('rides out PostgreSQL going away mid-work: agents retry, every job still commits once', async () => {
    const ins = await store.insertMany(
      Array.from({ length: 30 }, () => ({
        tenantId: 't',
        type: 'sleep',
        params: { ms: 300 },
        priority: 0,
        jobClass: 'latency',
        memBytes: 0,
        idempotencyKey: null,
      })),
    );
    const jobs = ins.map((o) => (o.ok ? o.job : assert.fail('insert')));
    await queue.add(jobs.map((j) => ({ id: j.id, deviceClass: 'cpu', priority: 0, memBytes: 0, data: {} })));
    await sleep(300);
    await pgs.bounce!(1500);
    const t0 = Date.now();
    for (;;) {
      const states = await Promise.all(jobs.map((j) => store.get(j.id).catch(() => null)));
      if (states.every((s) => s?.state === 'succeeded')) break;
      if (Date.now() - t0 > 45_000) {
        const { Job, Queue } = await import('bullmq');
        const bq = new Queue('jobs-cpu', { connection: queue.redis, prefix });
        for (const j of jobs.filter((_, i) => states[i]?.state !== 'succeeded')) {
          const bj = await Job.fromId(bq, j.id);
          const st = bj ? await bj.getState() : 'none';
          console.log(`# stuck ${j.id}: ${st} ${JSON.stringify(bj?.returnvalue)} ${bj?.failedReason ?? ''}`);
        }
        assert.fail(`not all succeeded: ${states.map((s) => s?.state).join(',')}`);
      }
      await sleep(200);
    }
    for (const j of jobs)
      assert.equal((await store.attempts(j.id)).filter((a) => a.outcome === 'succeeded').length, 1, j.id);
  });

  it('holds a job no live agent can fit, with the reason, and never drops it', async () => {
    const agents = new RedisAgentRegistry(queue.redis, prefix);
    for (let i = 0; i < 50 && (await agents.list()).length === 0; i++) await sleep(50);
    const [o] = await store.insertMany([
      {
        tenantId: 't',
        type: 'sleep',
        params: { ms: 1 },
        priority: 0,
        jobClass: 'training',
        memBytes: 2 ** 50,
        idempotencyKey: null,
      },
    ]);
    assert.ok(o?.ok);
    const placed = await placeJobs([o.job], {
      agents: await agents.list(),
      store,
      queue,
      deviceClassOf: () => 'cpu',
    });
    assert.equal(placed.queued, 0);
    const held = await store.get(o.job.id);
    assert.equal(held?.state, 'queued');
    assert.match(held?.message ?? '', /^held: no live agent .*cpu.*fits/);
  });

  it('names the URL when Redis or PostgreSQL is unreachable at start', async () => {
    const port = await freePort();
    await assert.rejects(BullQueue.open({ url: `redis://127.0.0.1:${port}` }), (e: unknown) => {
      return isTandemError(e, 'TANDEM_ERR_UNAVAILABLE') && e.message.includes(`127.0.0.1:${port}`);
    });
    await assert.rejects(PgJobStore.open(`postgres://u:secret@127.0.0.1:${port}/db`), (e: unknown) => {
      return (
        isTandemError(e, 'TANDEM_ERR_UNAVAILABLE') &&
        e.message.includes(`127.0.0.1:${port}`) &&
        !e.message.includes('secret')
      );
    });
  });
});
