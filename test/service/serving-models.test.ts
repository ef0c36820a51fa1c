/**
 * The model repository through the HTTP API on the real CPU runtime: an uploaded safetensors MLP
 * answers what a float64 reference of the same weights computes; every bad input has its code; a bad
 * or mismatched weights file is refused while other models keep serving; registration from a train
 * job's checkpoint; registrations survive a restart; unload.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { saveSafetensors } from '../../src/nn/safetensors.js';
import { cpuTestService, testService, waitForJob } from './helpers.js';
import { MAX_INFER_BODY_BYTES } from '../../src/service/http/routes/models.js';
import {
  errorCode,
  infer,
  mustRegister,
  randomImage,
  registerModel,
  serverTiming,
  uploadModelFile,
} from './serving-helpers.js';

function rand(n: number, seed: number, scale: number): Float32Array {
  let x = seed >>> 0 || 7;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = ((x / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

/** Softmax(W2·relu(W1·x + b1) + b2) in float64. */
function reference(w: Record<string, Float32Array>, x: readonly number[], hidden: number): number[] {
  const h = new Float64Array(hidden);
  for (let j = 0; j < hidden; j++) {
    let s = w['fc1.bias']![j]!;
    for (let i = 0; i < 784; i++) s += w['fc1.weight']![j * 784 + i]! * x[i]!;
    h[j] = Math.max(0, s);
  }
  const z = Array.from({ length: 10 }, (_, c) => {
    let s = w['fc2.bias']![c]!;
    for (let j = 0; j < hidden; j++) s += w['fc2.weight']![c * hidden + j]! * h[j]!;
    return s;
  });
  const m = Math.max(...z);
  const e = z.map((v) => Math.exp(v - m));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

void test(
  'models: uploaded weights match a float64 reference; bad inputs; bad weights; unload; restart',
  { timeout: 120_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    const tmp = mkdtempSync(join(tmpdir(), 'tandem-weights-'));
    try {
      const hidden = 32;
      const w = {
        'fc1.weight': rand(hidden * 784, 1, 0.05),
        'fc1.bias': rand(hidden, 2, 0.1),
        'fc2.weight': rand(10 * hidden, 3, 0.3),
        'fc2.bias': rand(10, 4, 0.1),
      };
      const file = join(tmp, 'mlp.safetensors');
      await saveSafetensors(file, {
        'fc1.weight': { dtype: 'f32', shape: [hidden, 784], data: w['fc1.weight'] },
        'fc1.bias': { dtype: 'f32', shape: [hidden], data: w['fc1.bias'] },
        'fc2.weight': { dtype: 'f32', shape: [10, hidden], data: w['fc2.weight'] },
        'fc2.bias': { dtype: 'f32', shape: [10], data: w['fc2.bias'] },
      });
      const id = await uploadModelFile(s, readFileSync(file));
      const reg = await registerModel(s, {
        name: 'small',
        kind: 'mlp',
        config: { sizes: [784, hidden, 10] },
        upload: id,
      });
      assert.equal(reg.statusCode, 201, reg.body);
      const view = reg.json() as {
        version: number;
        state: string;
        weightBytes: number;
        source: { type: string };
      };
      assert.deepEqual([view.version, view.state, view.source.type], [1, 'ready', 'upload']);
      assert.equal(view.weightBytes, (hidden * 785 + 10 * (hidden + 1)) * 4);

      for (let k = 0; k < 3; k++) {
        const x = randomImage(100 + k);
        const res = await infer(s, 'small', { inputs: x });
        assert.equal(res.statusCode, 200, res.body);
        const out = (res.json() as { version: number; outputs: { probabilities: number[]; class: number } })
          .outputs;
        const ref = reference(w, x, hidden);
        for (let c = 0; c < 10; c++)
          assert.ok(
            Math.abs(out.probabilities[c]! - ref[c]!) < 1e-5,
            `class ${c}: ${out.probabilities[c]} vs ${ref[c]}`,
          );
        assert.equal(out.class, ref.indexOf(Math.max(...ref)));
        const timing = serverTiming(res);
        for (const k2 of ['queue', 'compute', 'serialize'])
          assert.ok(Number.isFinite(timing[k2]), `${k2} in Server-Timing`);
        assert.equal(res.headers['x-tandem-batch-size'], '1');
      }
      // The same image as 28 rows and as base64 bytes.
      const bytes = Buffer.from(Array.from({ length: 784 }, (_, i) => (i * 37) % 256));
      const asU8 = await infer(s, 'small', { inputs: { u8: bytes.toString('base64') } });
      const rows = Array.from({ length: 28 }, (_, r) =>
        Array.from(bytes.subarray(r * 28, r * 28 + 28), (b) => b / 255),
      );
      const asRows = await infer(s, 'small', { inputs: rows }, 1);
      assert.equal(asU8.statusCode, 200, asU8.body);
      assert.deepEqual(
        (asU8.json() as { outputs: unknown }).outputs,
        (asRows.json() as { outputs: unknown }).outputs,
      );

      // Bad inputs: each its code and status.
      const bad: [unknown, number, string][] = [
        [{ inputs: [1, 2, 3] }, 400, 'TANDEM_ERR_SHAPE'],
        [{ inputs: [...randomImage(1).slice(0, 783), 'x'] }, 400, 'TANDEM_ERR_DTYPE'],
        [{ inputs: { u8: '!!not base64!!' } }, 400, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [{ inputs: { u8: 'AAAA' } }, 400, 'TANDEM_ERR_SHAPE'],
        [{ inputs: 'an image' }, 400, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [{}, 400, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [{ inputs: randomImage(2), priority: 1000 }, 400, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [{ inputs: randomImage(2), timeoutMs: 0 }, 504, 'TANDEM_ERR_DEADLINE_EXCEEDED'],
      ];
      for (const [payload, status, code] of bad) {
        const res = await infer(s, 'small', payload as Record<string, unknown>);
        assert.equal(res.statusCode, status, `${JSON.stringify(payload).slice(0, 60)}: ${res.body}`);
        assert.equal(errorCode(res), code);
      }
      assert.equal(errorCode(await infer(s, 'nope', { inputs: randomImage(1) })), 'TANDEM_ERR_NOT_FOUND');
      assert.equal((await infer(s, 'small', { inputs: randomImage(1) }, 9)).statusCode, 404);
      const huge = await s.svc.app.inject({
        method: 'POST',
        url: '/v1/models/small/infer',
        headers: { ...s.auth(), 'content-type': 'application/json' },
        // Past the infer routes' own limit (tensors: MAX_INFER_BODY_BYTES, above the service's bodyLimit).
        payload: `{"inputs":"${'a'.repeat(MAX_INFER_BODY_BYTES)}"}`,
      });
      assert.equal(huge.statusCode, 413, huge.body.slice(0, 200));
      assert.equal(errorCode(huge as never), 'TANDEM_ERR_PAYLOAD_TOO_LARGE');

      // Bad weights: not safetensors, or not matching the config. Refused; the service serves on.
      const junk = await registerModel(s, {
        name: 'junk',
        kind: 'mlp',
        upload: await uploadModelFile(s, Buffer.from('not a safetensors file at all')),
      });
      assert.equal(junk.statusCode, 422, junk.body);
      assert.equal(errorCode(junk), 'TANDEM_ERR_BAD_CHECKPOINT');
      const mismatch = await registerModel(s, {
        name: 'wrong',
        kind: 'mlp',
        config: { sizes: [784, 64, 10] },
        upload: await uploadModelFile(s, readFileSync(file)),
      });
      assert.equal(errorCode(mismatch), 'TANDEM_ERR_BAD_CHECKPOINT', mismatch.body);
      assert.equal(
        errorCode(await registerModel(s, { name: 'x', kind: 'resnet' })),
        'TANDEM_ERR_INVALID_ARGUMENT',
      );
      assert.equal(
        errorCode(await registerModel(s, { name: 'x', kind: 'mlp', config: { sizes: [784, 10], depth: 3 } })),
        'TANDEM_ERR_INVALID_ARGUMENT',
      );
      assert.equal(
        errorCode(await registerModel(s, { name: 'x', kind: 'mlp', fromJob: 'job_nope' })),
        'TANDEM_ERR_NOT_FOUND',
      );
      assert.equal((await infer(s, 'small', { inputs: randomImage(5) })).statusCode, 200);
      assert.equal((await infer(s, 'junk', { inputs: randomImage(5) })).statusCode, 404);

      // A second version (built in); the newest serves by default; version 1 is still addressable.
      const v2 = await mustRegister(s, {
        name: 'small',
        kind: 'mlp',
        config: { sizes: [784, 16, 10], seed: 3 },
      });
      assert.equal(v2.version, 2);
      assert.equal(
        ((await infer(s, 'small', { inputs: randomImage(6) })).json() as { version: number }).version,
        2,
      );
      assert.equal(
        errorCode(await registerModel(s, { name: 'small', kind: 'mlp', version: 2 })),
        'TANDEM_ERR_CONFLICT',
      );

      // Metrics per model.
      const m = await s.svc.app.inject({ url: '/metrics', headers: s.auth() });
      for (const name of [
        'tandem_model_requests_total{model="small",version="1"',
        'tandem_model_failures_total{model="small",version="1",code="TANDEM_ERR_SHAPE"}',
        'tandem_model_batch_size_bucket',
        'tandem_model_compute_seconds_count{model="small",version="1"}',
        'tandem_model_queue_depth',
      ])
        assert.ok(m.body.includes(name), `${name} in /metrics`);

      // A restart: the registrations come back (loaded on first use) and answer the same.
      const before = (await infer(s, 'small', { inputs: randomImage(100) }, 1)).json() as {
        outputs: unknown;
      };
      await s.svc.close();
      const reopened = await testService({}, s.rt, s.dir);
      // The admin key of the first start (a restart prints none).
      const again = {
        ...reopened,
        admin: s.admin,
        auth: (key = s.admin) => ({ authorization: `Bearer ${key}` }),
      };
      const listed = (await again.svc.app.inject({ url: '/v1/models', headers: again.auth() })).json() as {
        models: { name: string; versions: { version: number; state: string }[] }[];
      };
      assert.deepEqual(
        listed.models.map((x) => [x.name, x.versions.map((v) => `${v.version}:${v.state}`)]),
        [['small', ['1:registered', '2:registered']]],
      );
      const after = await infer(again, 'small', { inputs: randomImage(100) }, 1);
      assert.equal(after.statusCode, 200, after.body);
      assert.deepEqual((after.json() as { outputs: unknown }).outputs, before.outputs);

      // Unload one version, then the model.
      const del = await again.svc.app.inject({
        method: 'DELETE',
        url: '/v1/models/small/versions/1',
        headers: again.auth(),
      });
      assert.deepEqual(del.json(), { name: 'small', unloaded: [1] });
      assert.equal((await infer(again, 'small', { inputs: randomImage(1) }, 1)).statusCode, 404);
      assert.equal((await infer(again, 'small', { inputs: randomImage(1) })).statusCode, 200);
      const all = await again.svc.app.inject({
        method: 'DELETE',
        url: '/v1/models/small',
        headers: again.auth(),
      });
      assert.deepEqual(all.json(), { name: 'small', unloaded: [2] });
      assert.equal((await infer(again, 'small', { inputs: randomImage(1) })).statusCode, 404);
      assert.equal(
        (await again.svc.app.inject({ url: '/v1/models/small', headers: again.auth() })).statusCode,
        404,
      );
      await again.svc.close();

      // A damaged index does not keep the service from starting: set aside, no models, jobs as ever.
      writeFileSync(join(s.dir, 'models', 'index.json'), '{"format": "tandem-models/1", "models": [');
      const third = await testService({}, s.rt, s.dir);
      const empty = await third.svc.app.inject({
        url: '/v1/models',
        headers: { authorization: `Bearer ${s.admin}` },
      });
      assert.deepEqual(empty.json(), { models: [] });
      assert.ok(readdirSync(join(s.dir, 'models')).some((f) => f.startsWith('index.json.damaged-')));
      await third.svc.close();
    } finally {
      rmSync(tmp, { recursive: true, force: true });
      await s.close(); // closing the closed first service does nothing
    }
  },
);

const FASHION = '/usr/share/datasets/fashion-mnist';

void test('models: registered from a train job’s last checkpoint', { timeout: 300_000 }, async (t) => {
  if (!existsSync(join(FASHION, 'train-images-idx3-ubyte.gz'))) {
    t.skip(`Fashion-MNIST is not installed at ${FASHION} (the train job's data)`);
    return;
  }
  const s = await cpuTestService(t);
  if (!s) return;
  try {
    const sub = await s.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: s.auth(),
      payload: { type: 'train', params: { model: 'mlp', steps: 2, batch: 16 } },
    });
    assert.equal(sub.statusCode, 202, sub.body);
    const id = (sub.json() as { id: string }).id;
    const done = await waitForJob(s, id, s.admin, 240_000);
    assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
    const wrongKind = await registerModel(s, { name: 'trained', kind: 'cnn', fromJob: id });
    assert.equal(errorCode(wrongKind), 'TANDEM_ERR_BAD_CHECKPOINT', wrongKind.body);
    const reg = await registerModel(s, { name: 'trained', kind: 'mlp', fromJob: id });
    assert.equal(reg.statusCode, 201, reg.body);
    assert.deepEqual((reg.json() as { source: unknown }).source, { type: 'job', job: id });
    const res = await infer(s, 'trained', { inputs: randomImage(3) });
    assert.equal(res.statusCode, 200, res.body);
    const p = (res.json() as { outputs: { probabilities: number[] } }).outputs.probabilities;
    assert.equal(p.length, 10);
    assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-5);
  } finally {
    await s.close();
  }
});
