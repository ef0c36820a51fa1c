/**
 * The `train` job over several GPUs: its parameters (gpus, parallel, microBatches, schedule) are
 * published in the job type's schema and checked at submit with stable codes — a mode without several
 * GPUs, more pipeline stages than layers, micro-batches that do not divide the batch, pipeline for a
 * non-GPT, checkpoints, a pinned device — and a server with fewer GPUs than asked for refuses the job at
 * submit naming the ones it has, while one with enough accepts it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ServiceRuntimeHost } from '../../src/service/parts.js';
import { fakeRuntime } from './fake-runtime.js';
import { testService, type TestService } from './helpers.js';

/** A fake runtime that lists `gpus` CUDA devices (nothing runs on them: only submit is tested). */
function withGpus(gpus: number): ServiceRuntimeHost {
  const rt = fakeRuntime();
  const devices = rt.devices as unknown as object[];
  for (let i = 0; i < gpus; i++)
    devices.push({
      info: {
        id: `cuda${i}`,
        kind: 'cuda',
        name: 'fake gpu',
        memoryBytes: 2 ** 37,
        peakFlops: { f32: 1e12 },
        details: {},
      },
      node: { name: `cuda${i}` },
    });
  (rt.backends as unknown as object[]).push({ kind: 'cuda', available: true, devices: [], copies: [] });
  return rt;
}

const gpt = { model: 'gpt', preset: 'gpt-micro', batch: 8, seqLen: 16, steps: 1 };

void describe('train job over several GPUs', () => {
  let one: TestService;
  let none: TestService;
  before(async () => {
    one = await testService({}, withGpus(1));
    none = await testService({}, fakeRuntime());
  });
  after(async () => {
    await one.close();
    await none.close();
  });

  const submit = (t: TestService, params: Record<string, unknown>) =>
    t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'train', params },
    });
  const error = async (t: TestService, params: Record<string, unknown>) => {
    const res = await submit(t, params);
    const body = res.json() as { error?: { code: string; message: string } };
    return { status: res.statusCode, code: body.error?.code, message: body.error?.message ?? res.body };
  };

  it('publishes gpus, parallel, microBatches and schedule in the train schema', async () => {
    const res = await one.svc.app.inject({ url: '/v1/job-types', headers: one.auth() });
    const train = (
      res.json() as { types: { name: string; params: { properties: Record<string, unknown> } }[] }
    ).types.find((x) => x.name === 'train');
    const props = train!.params.properties as Record<
      string,
      { enum?: string[]; maximum?: number; default?: unknown }
    >;
    assert.deepEqual(props['parallel']!.enum, ['data', 'zero1', 'pipeline']);
    assert.deepEqual(props['schedule']!.enum, ['1f1b', 'gpipe']);
    assert.equal(props['gpus']!.default, 1);
    assert.equal(props['gpus']!.maximum, 16);
    assert.ok(props['microBatches']);
  });

  it('refuses impossible requests at submit with stable codes', async () => {
    const cases: [Record<string, unknown>, number, string, RegExp][] = [
      [{ ...gpt, parallel: 'pipeline' }, 400, 'TANDEM_ERR_INVALID_ARGUMENT', /needs at least 2 GPUs/],
      [
        { ...gpt, gpus: 3, parallel: 'pipeline' },
        400,
        'TANDEM_ERR_INVALID_ARGUMENT',
        /3 stages for a model of 2 layers/,
      ],
      [
        { ...gpt, gpus: 2, parallel: 'pipeline', microBatches: 3 },
        400,
        'TANDEM_ERR_INVALID_ARGUMENT',
        /3 micro-batches do not divide the batch of 8/,
      ],
      [{ model: 'mlp', gpus: 2, parallel: 'pipeline' }, 422, 'TANDEM_ERR_UNSUPPORTED', /splits a gpt/],
      [{ ...gpt, gpus: 2, parallel: 'pipeline', precision: 'f16' }, 422, 'TANDEM_ERR_UNSUPPORTED', /f16/],
      [{ ...gpt, gpus: 2, checkpointEvery: 5 }, 422, 'TANDEM_ERR_UNSUPPORTED', /checkpoints/],
      [{ ...gpt, gpus: 2, device: 'cpu' }, 400, 'TANDEM_ERR_INVALID_ARGUMENT', /takes the first 2 GPUs/],
      [{ ...gpt, gpus: 2, staticStep: true }, 422, 'TANDEM_ERR_UNSUPPORTED', /runs on one device, not 2/],
    ];
    for (const [params, status, code, message] of cases) {
      const e = await error(one, params);
      assert.equal(e.status, status, `${JSON.stringify(params)}: ${e.message}`);
      assert.equal(e.code, code, JSON.stringify(params));
      assert.match(e.message, message);
    }
    // Schema bounds: 17 GPUs, a zero2 mode.
    assert.equal((await submit(one, { ...gpt, gpus: 17 })).statusCode, 400);
    assert.equal((await submit(one, { ...gpt, gpus: 2, parallel: 'zero2' })).statusCode, 400);
  });

  it('more GPUs than the server has: DEVICE_ABSENT at submit, naming those it has', async () => {
    const e = await error(one, { ...gpt, gpus: 2, parallel: 'pipeline' });
    assert.equal(e.status, 400, e.message);
    assert.equal(e.code, 'TANDEM_ERR_DEVICE_ABSENT');
    assert.match(e.message, /asks for 2 cuda devices; this server has 1 \(cuda0\)/);
    const n = await error(none, { ...gpt, gpus: 2, parallel: 'data' });
    assert.equal(n.code, 'TANDEM_ERR_DEVICE_ABSENT');
    assert.match(n.message, /no device "cuda"/);
  });

  it('a server with enough GPUs accepts the job', async () => {
    const two = await testService({}, withGpus(2));
    try {
      const res = await submit(two, { ...gpt, gpus: 2, parallel: 'pipeline', microBatches: 4 });
      assert.equal(res.statusCode, 202, res.body);
    } finally {
      await two.close();
    }
  });
});
