/**
 * Aborts and leaks in the interactive lane (real CPU runtime, the mlp model): clients that hang up
 * while their requests wait are taken out of the queue and never run (over a real socket); 10^5
 * requests through a model's batcher with 5 % cancelled and every one under a deadline leave no
 * queued or running request, no armed timer and no device memory behind.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { cpuTestService } from './helpers.js';
import { mustRegister, randomImage } from './serving-helpers.js';

interface Answer {
  status: number;
  batch: number;
}

void test(
  'aborts: clients that hang up while queued are never run and free their slots',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    try {
      await mustRegister(s, {
        name: 'ab',
        kind: 'mlp',
        batching: { maxBatchSize: 64, maxQueueDelayUs: 400_000 },
      });
      await s.svc.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (s.svc.app.server.address() as AddressInfo).port;
      const body = JSON.stringify({ inputs: randomImage(4) });
      const send = (abortAfterMs: number | null): Promise<Answer | 'aborted'> =>
        new Promise((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/v1/models/ab/infer',
              headers: {
                ...s.auth(),
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
              },
            },
            (res) => {
              res.resume();
              res.on('end', () =>
                resolve({
                  status: res.statusCode ?? 0,
                  batch: Number(res.headers['x-tandem-batch-size'] ?? 0),
                }),
              );
            },
          );
          req.on('error', (e) => (abortAfterMs === null ? reject(e) : resolve('aborted')));
          req.end(body);
          if (abortAfterMs !== null) setTimeout(() => req.destroy(), abortAfterMs);
        });
      const answers = await Promise.all(Array.from({ length: 10 }, (_, k) => send(k % 3 === 0 ? 100 : null)));
      const aborted = answers.filter((a) => a === 'aborted').length;
      assert.equal(aborted, 4);
      const served = answers.filter((a): a is Answer => a !== 'aborted');
      assert.deepEqual(
        served.map((a) => [a.status, a.batch]),
        Array.from({ length: 6 }, () => [200, 6]),
        'the batch held only the six clients still there',
      );
      const v = await s.svc.models.ready('ab');
      assert.deepEqual(
        [v.batcher!.queued, v.batcher!.inFlightItems, v.batcher!.timersArmed, v.stats.batches],
        [0, 0, 0, 1],
      );
    } finally {
      await s.close();
    }
  },
);

void test(
  'aborts: 10^5 requests with 5 % cancelled leave nothing behind',
  { timeout: 300_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    try {
      await mustRegister(s, {
        name: 'leak',
        kind: 'mlp',
        config: { sizes: [784, 16, 10] },
        batching: { maxBatchSize: 128, maxQueueDelayUs: 0, maxQueueSize: 100_000 },
      });
      const v = await s.svc.models.ready('leak');
      const batcher = v.batcher!;
      const item = v.model!.parse(randomImage(7));
      const used = (): number => s.rt.memoryUsage().reduce((a, m) => a + m.usedBytes, 0);
      const wave = async (n: number, first: number) => {
        const pending = Array.from({ length: n }, () => batcher.submit(item, { timeoutMs: 60_000 }));
        let cancelled = 0;
        for (let i = 0; i < n; i++)
          if ((first + i) % 20 === 0) {
            batcher.cancel(pending[i]!);
            cancelled++;
          }
        const outs = await Promise.all(pending.map((p) => p.promise));
        return {
          ok: outs.filter((o) => o.error === undefined).length,
          cancelled,
          failed: outs.filter((o) => o.error && o.error.code !== 'TANDEM_ERR_CANCELLED').length,
        };
      };
      await wave(1000, 1); // warm-up: pools and kernels
      const baseline = used();
      const total = 100_000;
      let ok = 0;
      let cancelled = 0;
      const t0 = performance.now();
      for (let first = 0; first < total; first += 2000) {
        const r = await wave(2000, first);
        assert.equal(r.failed, 0);
        ok += r.ok;
        cancelled += r.cancelled;
      }
      const seconds = (performance.now() - t0) / 1000;
      console.log(
        `# 10^5 requests through the batcher (mlp 784-16-10, CPU): ${(total / seconds).toFixed(0)} req/s, ${cancelled} cancelled, mean batch ${v.stats.view().meanBatchSize.toFixed(1)}`,
      );
      assert.equal(cancelled, total / 20);
      assert.equal(ok, total - cancelled);
      assert.deepEqual(
        [batcher.queued, batcher.inFlight, batcher.inFlightItems, batcher.timersArmed],
        [0, 0, 0, 0],
      );
      assert.equal(used(), baseline, 'device memory back to where it was');
    } finally {
      await s.close();
    }
  },
);
