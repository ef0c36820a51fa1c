/**
 * The dynamic batcher through the service (real CPU runtime, the mlp model): concurrent requests form
 * batches larger than one and raise throughput over batching off (both figures printed, batch sizes
 * asserted); maxQueueDelayUs holds a lone request; higher priorities go first; requests over
 * maxQueueSize are refused exactly, with Retry-After; a deadline that passes answers 504 and the
 * request never runs; one bad item in a batch fails alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuTestService, type TestService } from './helpers.js';
import {
  batchSize,
  errorCode,
  infer,
  mustRegister,
  randomImage,
  serverTiming,
  type InjectAnswer,
} from './serving-helpers.js';

interface Stats {
  batches: number;
  requests: number;
  meanBatchSize: number;
}

async function stats(s: TestService, name: string): Promise<Stats & { queued: number; inFlight: number }> {
  const d = (await s.svc.app.inject({ url: `/v1/models/${name}`, headers: s.auth() })).json() as {
    versions: { stats: Stats; queued: number; inFlight: number }[];
  };
  const v = d.versions[0]!;
  return { ...v.stats, queued: v.queued, inFlight: v.inFlight };
}

/** `concurrency` clients, each sending requests one after another, for `total` requests. */
async function closedLoop(
  s: TestService,
  name: string,
  concurrency: number,
  total: number,
): Promise<{ rps: number; sizes: number[] }> {
  const image = randomImage(9);
  const sizes: number[] = [];
  let sent = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < total) {
        sent++;
        const res = await infer(s, name, { inputs: image });
        assert.equal(res.statusCode, 200, res.body);
        sizes.push(batchSize(res));
      }
    }),
  );
  return { rps: total / ((performance.now() - t0) / 1000), sizes };
}

void test(
  'batching: forms batches under load and raises throughput over batching off',
  { timeout: 120_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    try {
      await mustRegister(s, {
        name: 'on',
        kind: 'mlp',
        batching: { maxBatchSize: 32, maxQueueDelayUs: 2000 },
      });
      await mustRegister(s, { name: 'off', kind: 'mlp', batching: { maxBatchSize: 1, maxQueueDelayUs: 0 } });
      await closedLoop(s, 'on', 4, 40); // warm-up (kernels, pools)
      await closedLoop(s, 'off', 4, 40);
      const off = await closedLoop(s, 'off', 32, 640);
      const on = await closedLoop(s, 'on', 32, 640);
      const mean = (x: number[]) => x.reduce((a, b) => a + b, 0) / x.length;
      console.log(
        `# mlp over HTTP (inject), 32 clients: batching off ${off.rps.toFixed(0)} req/s (batch ${mean(off.sizes).toFixed(1)}), ` +
          `on ${on.rps.toFixed(0)} req/s (mean batch ${mean(on.sizes).toFixed(1)}, max ${Math.max(...on.sizes)}): ${(on.rps / off.rps).toFixed(2)}×`,
      );
      assert.ok(off.sizes.every((n) => n === 1));
      assert.ok(Math.max(...on.sizes) > 1 && mean(on.sizes) > 2, `batch sizes ${mean(on.sizes)}`);
      assert.ok(on.sizes.every((n) => n >= 1 && n <= 32));
      const st = await stats(s, 'on');
      assert.equal(st.queued + st.inFlight, 0);
    } finally {
      await s.close();
    }
  },
);

void test(
  'batching: maxQueueDelayUs holds a lone request; a full batch goes at once',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    try {
      await mustRegister(s, {
        name: 'slow',
        kind: 'mlp',
        batching: { maxBatchSize: 4, maxQueueDelayUs: 150_000 },
      });
      await infer(s, 'slow', { inputs: randomImage(1) }); // warm-up
      const t0 = performance.now();
      const lone = await infer(s, 'slow', { inputs: randomImage(1) });
      const waited = performance.now() - t0;
      assert.equal(lone.statusCode, 200);
      const q = serverTiming(lone)['queue']!;
      assert.ok(q >= 149 && q < 1000, `queue ${q} ms`);
      assert.ok(waited >= 149, `answered after ${waited} ms`);
      // Four at once fill maxBatchSize: sent without waiting the delay.
      const four = await Promise.all([1, 2, 3, 4].map((k) => infer(s, 'slow', { inputs: randomImage(k) })));
      for (const r of four) {
        assert.equal(batchSize(r), 4);
        assert.ok(serverTiming(r)['queue']! < 140, `queue ${serverTiming(r)['queue']} ms`);
      }
    } finally {
      await s.close();
    }
  },
);

void test(
  'batching: higher priority first (fill and level batches); maxQueueSize refuses exactly the requests over it',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    try {
      await mustRegister(s, {
        name: 'prio',
        kind: 'mlp',
        batching: { maxBatchSize: 8, maxQueueDelayUs: 400_000, priorityLevels: 2 },
      });
      const low = Array.from({ length: 6 }, (_, k) =>
        infer(s, 'prio', { inputs: randomImage(k), priority: 0 }),
      );
      await new Promise((r) => setTimeout(r, 60));
      const high = Array.from({ length: 4 }, (_, k) =>
        infer(s, 'prio', { inputs: randomImage(k), priority: 5 }),
      );
      const [lows, highs] = [await Promise.all(low), await Promise.all(high)];
      // 10 waiting ≥ 8: the first batch takes the 4 high ones and the 4 oldest low ones; the last 2 low
      // ones go after the delay.
      assert.deepEqual(highs.map(batchSize), [8, 8, 8, 8]);
      assert.deepEqual(lows.map(batchSize), [8, 8, 8, 8, 2, 2]);

      // priorityBatching 'level': the same arrivals, but the 4 high ones run as a batch of their own
      // and the 6 low ones together after the delay.
      await mustRegister(s, {
        name: 'prio-level',
        kind: 'mlp',
        batching: {
          maxBatchSize: 8,
          maxQueueDelayUs: 400_000,
          priorityLevels: 2,
          priorityBatching: 'level',
        },
      });
      const lowL = Array.from({ length: 6 }, (_, k) =>
        infer(s, 'prio-level', { inputs: randomImage(k), priority: 0 }),
      );
      await new Promise((r) => setTimeout(r, 60));
      const highL = Array.from({ length: 4 }, (_, k) =>
        infer(s, 'prio-level', { inputs: randomImage(k), priority: 5 }),
      );
      const [lowsL, highsL] = [await Promise.all(lowL), await Promise.all(highL)];
      assert.deepEqual(highsL.map(batchSize), [4, 4, 4, 4]);
      assert.deepEqual(lowsL.map(batchSize), [6, 6, 6, 6, 6, 6]);
      // Each high one waited less than any low one (which waited for the delay after the high batch).
      const queueOf = (r: InjectAnswer): number => serverTiming(r)['queue'] ?? NaN;
      assert.ok(Math.max(...highsL.map(queueOf)) < Math.min(...lowsL.map(queueOf)));
      const bad = await s.svc.app.inject({
        method: 'POST',
        url: '/v1/models',
        headers: s.auth(),
        payload: { name: 'prio-bad', kind: 'mlp', batching: { priorityBatching: 'strict' } },
      });
      assert.equal(bad.statusCode, 400, bad.body);

      await mustRegister(s, {
        name: 'small-queue',
        kind: 'mlp',
        batching: { maxBatchSize: 64, maxQueueDelayUs: 1_000_000, maxQueueSize: 5 },
      });
      const answers: InjectAnswer[] = await Promise.all(
        Array.from({ length: 9 }, (_, k) => infer(s, 'small-queue', { inputs: randomImage(k) })),
      );
      const refused = answers.filter((r) => r.statusCode === 429);
      assert.equal(refused.length, 4);
      for (const r of refused) {
        assert.equal(errorCode(r), 'TANDEM_ERR_OVERLOADED');
        assert.ok(Number(r.headers['retry-after']) >= 1);
      }
      const served = answers.filter((r) => r.statusCode === 200);
      assert.equal(served.length, 5);
      assert.ok(served.every((r) => batchSize(r) === 5));
    } finally {
      await s.close();
    }
  },
);

void test(
  'batching: a passed deadline is 504 and never runs; delay serves it late; one bad item fails alone',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    try {
      await mustRegister(s, {
        name: 'late',
        kind: 'mlp',
        batching: { maxBatchSize: 64, maxQueueDelayUs: 300_000 },
      });
      const t0 = performance.now();
      const res = await infer(s, 'late', { inputs: randomImage(1), timeoutMs: 50 });
      const took = performance.now() - t0;
      assert.equal(res.statusCode, 504, res.body);
      assert.equal(errorCode(res), 'TANDEM_ERR_DEADLINE_EXCEEDED');
      assert.ok(took < 250, `answered after ${took} ms, not at the batch`);
      await new Promise((r) => setTimeout(r, 400));
      const st = await stats(s, 'late');
      assert.deepEqual([st.batches, st.queued, st.inFlight], [0, 0, 0], 'it never ran');

      // The model's own timeout with onTimeout 'delay': served after the others, not refused.
      await mustRegister(s, {
        name: 'delayed',
        kind: 'mlp',
        batching: { maxBatchSize: 64, maxQueueDelayUs: 100_000, timeoutUs: 20_000, onTimeout: 'delay' },
      });
      assert.equal((await infer(s, 'delayed', { inputs: randomImage(2) })).statusCode, 200);
      await mustRegister(s, {
        name: 'rejecting',
        kind: 'mlp',
        batching: { maxBatchSize: 64, maxQueueDelayUs: 100_000, timeoutUs: 20_000 },
      });
      assert.equal((await infer(s, 'rejecting', { inputs: randomImage(2) })).statusCode, 504);

      // One image whose scores overflow float32 fails alone; the rest of its batch is answered.
      await mustRegister(s, {
        name: 'mixed',
        kind: 'mlp',
        batching: { maxBatchSize: 4, maxQueueDelayUs: 1_000_000 },
      });
      const items = [randomImage(1), new Array<number>(784).fill(3e38), randomImage(2), randomImage(3)];
      const out = await Promise.all(items.map((x) => infer(s, 'mixed', { inputs: x })));
      assert.deepEqual(
        out.map((r) => r.statusCode),
        [200, 422, 200, 200],
      );
      assert.equal(errorCode(out[1]!), 'TANDEM_ERR_UNSTABLE');
      assert.deepEqual(out.map(batchSize), [4, 4, 4, 4]);
    } finally {
      await s.close();
    }
  },
);
