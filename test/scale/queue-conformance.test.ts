/**
 * One conformance suite, run against every queue implementation: the embedded SQLite queue always, and
 * BullMQ on a throwaway redis-server when one is installed (skipped with the reason otherwise).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BullQueue } from '../../src/service/queue/bullmq-queue.js';
import { openQueue } from '../../src/service/queue/open.js';
import { JobFailure, type JobQueue, type QueueEvent } from '../../src/service/queue/queue.js';
import { startRedis, type Server } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const TUNING = { lockMs: 1000, stalledCheckMs: 500, maxStalls: 3 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Target {
  name: string;
  /** A fresh queue on an isolated namespace, plus the URL/prefix a child process can open. */
  open(): Promise<{ q: JobQueue; url: string; prefix: string }>;
  skip: string | false;
}

let redis: Server | null = null;
const tmp = mkdtempSync(join(tmpdir(), 'tandem-queue-'));
let n = 0;
const redisStart = await startRedis();
if (redisStart.ok) redis = redisStart.server;
else console.log(`# skip bullmq conformance: ${redisStart.reason}`);

const targets: Target[] = [
  {
    name: 'embedded (SQLite)',
    skip: false,
    open: async () => {
      const url = `sqlite:${join(tmp, `q${++n}.sqlite`)}`;
      return { q: await openQueue(url, { tuning: TUNING }), url, prefix: 'x' };
    },
  },
  {
    name: 'bullmq (Redis)',
    skip: redisStart.ok ? false : redisStart.reason,
    open: async () => {
      const prefix = `t${++n}`;
      const q = await openQueue(redis!.url, { tuning: TUNING, prefix });
      return { q, url: redis!.url, prefix };
    },
  },
];

function collect(q: JobQueue): QueueEvent[] {
  const events: QueueEvent[] = [];
  q.on((e) => events.push(e));
  return events;
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function ready(q: JobQueue, lanes: string[]): Promise<void> {
  if (q instanceof BullQueue) await q.eventsReady(lanes);
}

const spec = (id: string, extra: Partial<{ priority: number; memBytes: number; attempts: number }> = {}) => ({
  id,
  deviceClass: 'cpu',
  priority: extra.priority ?? 0,
  memBytes: extra.memBytes ?? 0,
  data: { n: id },
  attempts: extra.attempts ?? 3,
  backoffMs: 100,
});

after(async () => {
  await redis?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

for (const t of targets) {
  describe(`queue conformance: ${t.name}`, { skip: t.skip }, () => {
    let q: JobQueue;
    before(async () => {
      ({ q } = await t.open());
    });
    after(async () => q.close());

    it('runs higher priorities first, then in submission order; ids are deduplicated', async () => {
      const { q } = await t.open();
      await q.add([
        spec('a', { priority: -5 }),
        spec('b', { priority: 50 }),
        spec('c'),
        spec('d', { priority: 50 }),
      ]);
      await q.add([spec('b', { priority: 50 })]);
      const order: string[] = [];
      const c = q.consume({
        deviceClasses: ['cpu'],
        concurrency: 1,
        handler: async (j) => void order.push(j.id),
      });
      await until(() => order.length >= 4, 5000, 'four jobs');
      await sleep(200);
      await c.close();
      assert.deepEqual(order, ['b', 'd', 'c', 'a']);
      const counts = await q.counts(['cpu']);
      assert.equal(counts['cpu']!.completed, 4);
      assert.equal(counts['cpu']!.waiting, 0);
      await q.close();
    });

    it('retries a failing job with exponential backoff, then completes it; events tell each step', async () => {
      await ready(q, ['cpu']);
      const events = collect(q);
      const starts: number[] = [];
      const c = q.consume({
        deviceClasses: ['cpu'],
        concurrency: 2,
        handler: async (j) => {
          if (j.id !== 'r1') return null;
          starts.push(Date.now());
          if (j.attemptsMade < 2) throw new Error(`boom ${j.attemptsMade}`);
          await j.progress(1, 'done');
          return { ok: j.attemptsMade };
        },
      });
      await q.add([spec('r1')]);
      await until(() => events.some((e) => e.type === 'completed' && e.id === 'r1'), 8000, 'r1 completed');
      await c.close();
      assert.equal(starts.length, 3);
      assert.ok(starts[1]! - starts[0]! >= 90, `first backoff ${starts[1]! - starts[0]!} ms`);
      assert.ok(starts[2]! - starts[1]! >= 190, `second backoff ${starts[2]! - starts[1]!} ms`);
      const fails = events.filter((e) => e.type === 'failed' && e.id === 'r1');
      assert.equal(fails.length, 2);
      assert.ok(fails.every((e) => e.type === 'failed' && !e.final));
      const done = events.find((e) => e.type === 'completed' && e.id === 'r1');
      assert.deepEqual(done?.type === 'completed' && done.result, { ok: 2 });
      assert.ok(events.some((e) => e.type === 'progress' && e.id === 'r1' && e.progress === 1));
    });

    it('fails for good after the last attempt, or at once on a non-retryable failure', async () => {
      await ready(q, ['cpu']);
      const events = collect(q);
      const runs = new Map<string, number>();
      const c = q.consume({
        deviceClasses: ['cpu'],
        concurrency: 2,
        handler: (j) => {
          runs.set(j.id, (runs.get(j.id) ?? 0) + 1);
          return Promise.reject(j.id === 'f2' ? new JobFailure('bad params', false) : new Error('always'));
        },
      });
      await q.add([spec('f1', { attempts: 2 }), spec('f2', { attempts: 5 })]);
      const final = (id: string) => events.some((e) => e.type === 'failed' && e.id === id && e.final);
      await until(() => final('f1') && final('f2'), 8000, 'final failures');
      await c.close();
      assert.equal(runs.get('f1'), 2);
      assert.equal(runs.get('f2'), 1);
      assert.ok((await q.counts(['cpu']))['cpu']!.failed >= 2);
    });

    it('a job no consumer here can hold is declined and taken by one that can', async () => {
      const small: string[] = [];
      const big: string[] = [];
      const a = q.consume({
        deviceClasses: ['gpu'],
        concurrency: 4,
        fits: (j) => j.memBytes <= 100,
        handler: async (j) => void small.push(j.id),
      });
      await q.add([
        { ...spec('m1', { memBytes: 1000 }), deviceClass: 'gpu' },
        { ...spec('m2', { memBytes: 10 }), deviceClass: 'gpu' },
      ]);
      await until(() => small.includes('m2'), 5000, 'm2 on the small consumer');
      await sleep(400);
      assert.deepEqual(small, ['m2']);
      const b = q.consume({
        deviceClasses: ['gpu'],
        concurrency: 1,
        handler: async (j) => void big.push(j.id),
      });
      // A decline hides the job from the decliner only, so the new consumer takes it on its first poll
      // (a shared back-off once let the small consumer win every race for it: over 15 s in CI).
      const offeredAt = Date.now();
      await until(() => big.includes('m1'), 5000, 'm1 on the big consumer');
      console.log(
        `# ${t.name}: declined job taken ${Date.now() - offeredAt} ms after the big consumer started`,
      );
      assert.deepEqual(small, ['m2'], 'the small consumer never ran the job it declined');
      await Promise.all([a.close(), b.close()]);
    });

    it('limits the start rate across consumers', async () => {
      const starts: number[] = [];
      const lim = { max: 4, durationMs: 500 };
      const h = async () => void starts.push(Date.now());
      const c1 = q.consume({ deviceClasses: ['slow'], concurrency: 8, rateLimit: lim, handler: h });
      const c2 = q.consume({ deviceClasses: ['slow'], concurrency: 8, rateLimit: lim, handler: h });
      await q.add(Array.from({ length: 12 }, (_, i) => ({ ...spec(`l${i}`), deviceClass: 'slow' })));
      await until(() => starts.length >= 12, 8000, 'twelve rate-limited jobs');
      await Promise.all([c1.close(), c2.close()]);
      const span = Math.max(...starts) - Math.min(...starts);
      assert.ok(span >= 900, `12 jobs at 4 per 500 ms took only ${span} ms`);
    });

    it('cancels a job that has not started, not one that finished', async () => {
      await q.add([{ ...spec('x1'), deviceClass: 'idle' }]);
      assert.equal(await q.cancel('x1', 'idle'), true);
      assert.equal(await q.cancel('x1', 'idle'), false);
      assert.equal((await q.counts(['idle']))['idle']!.waiting, 0);
    });

    it('recovers a job whose consumer was killed with -9 mid-job, within 5 s', async () => {
      const { q: q2, url, prefix } = await t.open();
      await ready(q2, ['cpu']);
      const events = collect(q2);
      await q2.add([spec('s1')]);
      const child = spawn(process.execPath, [join(here, 'fixtures', 'stall-worker.js'), url, 'cpu', prefix], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      await until(() => out.includes('took s1'), 10_000, 'the child to take s1');
      child.kill('SIGKILL');
      const killedAt = Date.now();
      let rerunAt = 0;
      const c = q2.consume({
        deviceClasses: ['cpu'],
        concurrency: 1,
        handler: async (j) => {
          if (j.id === 's1') rerunAt = Date.now();
          return 'second';
        },
      });
      await until(() => rerunAt > 0, 8000, 's1 re-run');
      const recovery = rerunAt - killedAt;
      console.log(`# ${t.name}: stalled job re-run ${recovery} ms after kill -9`);
      assert.ok(recovery <= 5000, `recovered in ${recovery} ms`);
      await until(() => events.some((e) => e.type === 'stalled' && e.id === 's1'), 3000, 'stalled event');
      await c.close();
      await q2.close();
    });
  });
}

describe(
  'bullmq: small jobs packed into envelopes',
  { skip: redisStart.ok ? false : redisStart.reason },
  () => {
    it('delivers every packed job once, with a completed event per job, and keeps big jobs single', async () => {
      const q = await BullQueue.open({ url: redis!.url, prefix: `pack${++n}`, pack: 10, tuning: TUNING });
      await q.eventsReady(['cpu']);
      const events = collect(q);
      const ran: string[] = [];
      const c = q.consume({
        deviceClasses: ['cpu'],
        concurrency: 2,
        handler: async (j) => {
          ran.push(j.id);
          return j.id.toUpperCase();
        },
      });
      await q.add([
        ...Array.from({ length: 25 }, (_, i) => spec(`p${i}`)),
        spec('big', { memBytes: 1 << 20 }),
      ]);
      await until(() => events.filter((e) => e.type === 'completed').length >= 26, 8000, '26 completions');
      await c.close();
      assert.equal(ran.length, 26);
      assert.equal(new Set(ran).size, 26);
      const done = events.find((e) => e.type === 'completed' && e.id === 'p7');
      assert.equal(done?.type === 'completed' && done.result, 'P7');
      await q.close();
    });
  },
);
