/**
 * The load generator against a real Fastify server started here that answers as the interactive lane
 * does (Server-Timing, x-tandem-batch-size, 429s): counts, the server split, the batch-size histogram,
 * concurrency held to N keep-alive connections, client aborts, labels, and the sweep/input parsing.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { isTandemError } from '../../../src/core/errors.js';
import {
  bodiesFromJson,
  mergeLoadReports,
  parseConcurrency,
  parseServerTiming,
  runLoad,
  runSweep,
  type LoadTarget,
} from '../../../src/service/client/load.js';

interface Inputs {
  delayMs?: number;
  fail?: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void describe('load generator against a real HTTP server', () => {
  let app: FastifyInstance;
  let target: LoadTarget;
  let inFlight = 0;
  let maxInFlight = 0;
  let sockets = new Set<unknown>();
  let closedEarly = 0;
  let slowArrived = 0;
  let badAuth = 0;

  before(async () => {
    app = Fastify();
    app.post<{ Params: { name: string }; Body: { inputs: Inputs } }>(
      '/v1/models/:name/infer',
      async (req, reply) => {
        if (req.headers.authorization !== 'Bearer k1') badAuth++;
        sockets.add(req.raw.socket);
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        // The response's connection closing before it was written: the client gave up.
        let gone = false;
        reply.raw.once('close', () => (gone ||= !reply.raw.writableFinished));
        if ((req.body.inputs.delayMs ?? 1) > 100) slowArrived++;
        try {
          await sleep(req.body.inputs.delayMs ?? 1);
          if (gone) closedEarly++;
          if (req.body.inputs.fail) {
            return await reply
              .code(429)
              .header('retry-after', '1')
              .send({ error: { code: 'TANDEM_ERR_OVERLOADED' } });
          }
          return await reply
            .header('server-timing', 'queue;dur=0.25, compute;dur=0.5, serialize;dur=0.125')
            .header('x-tandem-batch-size', String(inFlight))
            .send({ model: req.params.name, version: 1, outputs: { ok: true } });
        } finally {
          inFlight--;
        }
      },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    target = { url: `http://127.0.0.1:${port}`, key: 'k1', model: 'm' };
  });
  after(async () => {
    await app.close();
  });

  void it('counts a fixed number of requests, the server split, batch sizes and errors by status', async () => {
    maxInFlight = 0;
    sockets = new Set();
    const r = await runLoad(target, {
      concurrency: 4,
      warmupSeconds: 0,
      seconds: 60,
      requests: 200,
      request: (i) => ({
        body: JSON.stringify({ inputs: { delayMs: 2, fail: i % 10 === 9 } }),
        label: i % 2 === 0 ? 'even' : 'odd',
      }),
    });
    assert.equal(r.requests, 200);
    assert.deepEqual(r.errors, { '429': 20 });
    assert.equal(r.client.count, 180);
    assert.ok(r.client.p50 >= 2 && r.client.p99 >= r.client.p95 && r.client.p95 >= r.client.p50);
    assert.equal(r.server.queue.mean, 0.25);
    assert.equal(r.server.compute.p99, 0.5);
    assert.equal(r.server.serialize.mean, 0.125);
    const sizes = Object.entries(r.batchSizes);
    assert.equal(
      sizes.reduce((a, [, n]) => a + n, 0),
      180,
    );
    for (const [size] of sizes) assert.ok(Number(size) >= 1 && Number(size) <= 4, `batch size ${size}`);
    assert.equal(r.labels['even']!.count + r.labels['odd']!.count, 180);
    assert.equal(r.labelQueues['even']!.count + r.labelQueues['odd']!.count, 180);
    assert.equal(r.labelQueues['odd']!.p99, 0.25);
    assert.ok(r.inferPerSec > 0);
    assert.equal(maxInFlight, 4, 'a closed loop of 4 clients');
    assert.ok(sockets.size <= 4, `${sockets.size} connections for 4 clients (keep-alive)`);
    assert.equal(badAuth, 0);
  });

  void it('abandons requests past abortAfterMs and reports them as aborted', async () => {
    closedEarly = 0;
    slowArrived = 0;
    const r = await runLoad(target, {
      concurrency: 2,
      warmupSeconds: 0,
      seconds: 60,
      requests: 10,
      request: (i) =>
        i % 2 === 0
          ? { body: JSON.stringify({ inputs: { delayMs: 150 } }), abortAfterMs: 10 }
          : { body: JSON.stringify({ inputs: { delayMs: 1 } }) },
    });
    assert.equal(r.errors['aborted'], 5);
    assert.equal(r.client.count, 5);
    await sleep(200);
    // A request abandoned before the server read it never reaches the handler; each one that did
    // saw its connection close before it could answer.
    assert.ok(slowArrived >= 1);
    assert.equal(closedEarly, slowArrived, 'the server saw each abandoned connection close');
  });

  void it('measures a time window after the warm-up and sweeps concurrency levels', async () => {
    const levels: number[] = [];
    const reports = await runSweep(
      target,
      [1, 3],
      { warmupSeconds: 0.1, seconds: 0.3, request: () => ({ body: '{"inputs":{"delayMs":2}}' }) },
      (r) => levels.push(r.concurrency),
    );
    assert.deepEqual(levels, [1, 3]);
    for (const r of reports) {
      assert.ok(r.seconds >= 0.29 && r.seconds < 5, `window ${r.seconds}`);
      assert.ok(r.client.count > 0);
      assert.deepEqual(r.errors, {});
    }
    // Throughput is not compared: this shared box's timing is not the generator's to assert.
  });

  void it('keeps raw samples and request windows, counts the warm-up, and pools side-by-side reports', async () => {
    const run = (delayMs: number) =>
      runLoad(target, {
        concurrency: 2,
        warmupSeconds: 0.05,
        seconds: 60,
        requests: 20,
        raw: true,
        request: (i) => ({
          body: JSON.stringify({ inputs: { delayMs, fail: i % 5 === 4 } }),
          label: 'x',
        }),
      });
    const [a, b] = await Promise.all([run(2), run(30)]);
    for (const r of [a, b]) {
      assert.ok(r.warmupRequests >= 1, `warm-up requests ${r.warmupRequests}`);
      assert.equal(r.raw!.client.length, r.client.count);
      assert.equal(r.raw!.windowsUs.length, 2 * r.client.count, 'a [sent, answered] pair per success');
      for (let i = 0; i < r.raw!.windowsUs.length; i += 2) {
        const ms = (r.raw!.windowsUs[i + 1]! - r.raw!.windowsUs[i]!) / 1000;
        assert.ok(ms > 0 && ms < 10_000, `window ${ms} ms`);
      }
    }
    assert.ok(b.client.p50 >= 30, 'the slow server answers in 30 ms or more');
    const m = mergeLoadReports([a, b]);
    assert.equal(m.concurrency, 4);
    assert.equal(m.requests, a.requests + b.requests);
    assert.equal(m.warmupRequests, a.warmupRequests + b.warmupRequests);
    assert.equal(m.client.count, a.client.count + b.client.count);
    assert.equal(m.client.max, Math.max(a.client.max, b.client.max));
    assert.ok(m.client.p50 >= a.client.p50 && m.client.p50 <= b.client.p50, 'pooled, not averaged');
    assert.equal(m.errors['429'], (a.errors['429'] ?? 0) + (b.errors['429'] ?? 0));
    assert.equal(m.labels['x']!.count, m.client.count);
    assert.equal(m.server.compute.mean, 0.5);
    assert.ok(Math.abs(m.inferPerSec - (a.inferPerSec + b.inferPerSec)) < 1e-9);
    assert.throws(() => mergeLoadReports([a, { ...b, raw: undefined }]), /raw samples/);
  });

  void it('reports a server that is not there as network errors', async () => {
    const r = await runLoad(
      { ...target, url: 'http://127.0.0.1:1' },
      { concurrency: 1, warmupSeconds: 0, requests: 3, request: () => ({ body: '{}' }) },
    );
    assert.deepEqual(r.errors, { network: 3 });
  });
});

void describe('load generator parsing', () => {
  void it('parses concurrency sweeps', () => {
    assert.deepEqual(parseConcurrency('8'), [8]);
    assert.deepEqual(parseConcurrency('1:64'), [1, 2, 4, 8, 16, 32, 64]);
    assert.deepEqual(parseConcurrency('3:20'), [3, 6, 12, 20]);
    assert.deepEqual(parseConcurrency('4:16:4'), [4, 8, 12, 16]);
    for (const bad of ['0', '8:4', 'a', '1:2:3:4', '1.5', '', '1:64:0']) {
      assert.throws(
        () => parseConcurrency(bad),
        (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
        bad,
      );
    }
  });

  void it('parses Server-Timing', () => {
    const s = { queue: 0, compute: 0, serialize: 0, request: 0 };
    assert.equal(parseServerTiming('queue;dur=0.1, compute;dur=2.5,serialize;dur=1e-3', s), true);
    assert.deepEqual(s, { queue: 0.1, compute: 2.5, serialize: 0.001, request: NaN });
    parseServerTiming('queue;dur=0.1, compute;dur=2.5, serialize;dur=0.01, request;dur=0.07', s);
    assert.deepEqual(s, { queue: 0.1, compute: 2.5, serialize: 0.01, request: 0.07 });
    assert.equal(parseServerTiming(undefined, s), false);
    parseServerTiming('compute;dur=3, other;dur=9', s);
    assert.ok(Number.isNaN(s.queue) && s.compute === 3);
  });

  void it('reads input files as bodies, bare inputs or arrays', () => {
    assert.deepEqual(bodiesFromJson({ spot: 100 }), ['{"inputs":{"spot":100}}']);
    assert.deepEqual(bodiesFromJson({ inputs: [1], priority: 2 }), ['{"inputs":[1],"priority":2}']);
    assert.deepEqual(bodiesFromJson([{ a: 1 }, { inputs: 2 }]), ['{"inputs":{"a":1}}', '{"inputs":2}']);
    assert.throws(
      () => bodiesFromJson([]),
      (e: unknown) => isTandemError(e),
    );
  });
});
