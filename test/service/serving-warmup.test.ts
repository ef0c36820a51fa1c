/**
 * Model warm-up (Triton's model_warmup) through the HTTP API on the real CPU runtime: a registration's
 * warm-up requests run through the model's batcher before the registration answers (the runtime's task
 * counter shows them) and stay out of the model's figures; warm-up inputs the model refuses, or a
 * warm-up request the model fails, refuse the registration with the cause's code and leave nothing
 * registered; a malformed warmup is a 400; a warm-up of more requests than fit its time bound stops at
 * the bound (a registration does not hold the devices for longer).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WARMUP_MAX_MS } from '../../src/service/serving/version-loader.js';
import { cpuTestService, type TestService } from './helpers.js';
import { errorCode, infer, registerModel } from './serving-helpers.js';

const OPTION = {
  right: 'call',
  spot: 100,
  strike: 100,
  rate: 0.05,
  vol: 0.2,
  maturity: 1,
  paths: 2000,
  seed: 3,
};

/** tandem_tasks_total of the batched pricer's kernel on cpu0 (0 before any ran). */
async function pricerTasks(s: TestService): Promise<number> {
  const m = await s.svc.app.inject({ url: '/metrics', headers: s.auth() });
  const line = /tandem_tasks_total\{device="cpu0",op="mc_european_batch",status="ok"\} (\d+)/.exec(m.body);
  return line ? Number(line[1]) : 0;
}

interface View {
  state: string;
  warmupRequests: number | null;
  stats: { requests: number; batches: number };
}

void test(
  'lane warm-up: runs before the model is ready, outside its figures',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    t.after(() => s.close());
    const before = await pricerTasks(s);
    const reg = await registerModel(s, {
      name: 'warm',
      kind: 'option-pricer',
      placement: { kinds: ['cpu'] },
      batching: { maxBatchSize: 4, maxQueueDelayUs: 1000 },
      warmup: { inputs: OPTION, requests: 7 },
    });
    assert.equal(reg.statusCode, 201, reg.body);
    const view = reg.json() as View;
    assert.equal(view.state, 'ready');
    assert.equal(view.warmupRequests, 7);
    // 7 single requests, then a full batch of 4 (one or more batches): at least 8 batches ran.
    const ran = (await pricerTasks(s)) - before;
    assert.ok(ran >= 8, `warm-up batches run: ${ran}`);
    assert.deepEqual([view.stats.requests, view.stats.batches], [0, 0], 'warm-up is not in the figures');
    const res = await infer(s, 'warm', { inputs: OPTION });
    assert.equal(res.statusCode, 200, res.body);
    const after = await s.svc.app.inject({ url: '/v1/models/warm', headers: s.auth() });
    const stats = (after.json() as { versions: View[] }).versions[0]!.stats;
    assert.deepEqual([stats.requests, stats.batches], [1, 1]);
    // Without a count: the default number of requests.
    const dflt = await registerModel(s, {
      name: 'warm-default',
      kind: 'option-pricer',
      placement: { kinds: ['cpu'] },
      warmup: { inputs: OPTION },
    });
    assert.equal(dflt.statusCode, 201, dflt.body);
    assert.equal((dflt.json() as View).warmupRequests, 200);
  },
);

void test(
  'lane warm-up: bad warm-up inputs or a failing warm-up refuse the registration',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    t.after(() => s.close());
    const common = { kind: 'option-pricer', placement: { kinds: ['cpu'] } };
    const refused = await registerModel(s, {
      ...common,
      name: 'a',
      warmup: { inputs: { ...OPTION, spot: -5 }, requests: 3 },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(errorCode(refused), 'TANDEM_ERR_INVALID_ARGUMENT');
    // The cause's message after the prefix, its code not repeated inside it.
    assert.match(refused.body, /"message":"warmup: inputs\.spot must be > 0/);
    // A request the model itself fails (a price that overflows): the cause's code and status.
    const failing = await registerModel(s, {
      ...common,
      name: 'b',
      warmup: { inputs: { ...OPTION, spot: 1e300 }, requests: 2 },
    });
    assert.equal(failing.statusCode, 422, failing.body);
    assert.equal(errorCode(failing), 'TANDEM_ERR_UNSTABLE');
    assert.match(failing.body, /warmup: /);
    for (const bad of [{ requests: 3 }, { inputs: OPTION, requests: 0 }, { inputs: OPTION, extra: 1 }]) {
      const res = await registerModel(s, { ...common, name: 'c', warmup: bad });
      assert.equal(res.statusCode, 400, `${JSON.stringify(bad)}: ${res.body}`);
    }
    const listed = await s.svc.app.inject({ url: '/v1/models', headers: s.auth() });
    for (const name of ['"a"', '"b"', '"c"']) assert.ok(!listed.body.includes(`"name":${name}`), listed.body);
    // The lane still registers and serves the same model with good warm-up inputs.
    const ok = await registerModel(s, { ...common, name: 'a', warmup: { inputs: OPTION, requests: 2 } });
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal((await infer(s, 'a', { inputs: OPTION })).statusCode, 200);
  },
);

void test('lane warm-up: stops issuing requests at its time bound', { timeout: 60_000 }, async (t) => {
  const s = await cpuTestService(t);
  if (!s) return;
  t.after(() => s.close());
  const before = await pricerTasks(s);
  const t0 = performance.now();
  // 100,000 prices of 20,000 paths on this CPU take far longer than the bound.
  const reg = await registerModel(s, {
    name: 'long',
    kind: 'option-pricer',
    placement: { kinds: ['cpu'] },
    batching: { maxBatchSize: 2 },
    warmup: { inputs: { ...OPTION, paths: 20_000 }, requests: 100_000 },
  });
  const ms = performance.now() - t0;
  assert.equal(reg.statusCode, 201, reg.body);
  const ran = (await pricerTasks(s)) - before;
  assert.ok(ran > 0 && ran < 100_000, `warm-up batches run: ${ran}`);
  assert.ok(ms < WARMUP_MAX_MS + 5000, `registration took ${ms.toFixed(0)} ms`);
});
