/**
 * A job asking for a device kind (or id) the server does not have is refused at submit with 400
 * TANDEM_ERR_DEVICE_ABSENT and the backend's reason as `tandem devices` shows it — not accepted and
 * failed later. A real CPU runtime, with a plugged-in webgpu backend that reports itself unavailable.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Backend, BackendStatus } from '../../src/devices/device.js';
import { describeBackend } from '../../src/runtime/backends.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { testService, waitForJob, type TestService } from './helpers.js';

const REASON = 'no adapter: Dawn found no GPU (test backend)';
const absentWebGpu: Backend = {
  kind: 'webgpu',
  open: (): Promise<BackendStatus> =>
    Promise.resolve({ kind: 'webgpu', available: false, reason: REASON, devices: [], copies: [] }),
};

describe('device presence at submit', () => {
  let t: TestService;
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu', absentWebGpu], calibrate: false, log: () => {} });
    t = await testService({}, rt);
  });
  after(async () => {
    await t.close();
    await rt.close();
  });

  const submit = (params: Record<string, unknown>) =>
    t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'gemm', params },
    });

  it('refuses a kind whose backend is unavailable, with the reason tandem devices shows', async () => {
    const res = await submit({ n: 64, device: 'webgpu' });
    assert.equal(res.statusCode, 400, res.body);
    const err = (res.json() as { error: { code: string; message: string; details: { devices: string[] } } })
      .error;
    assert.equal(err.code, 'TANDEM_ERR_DEVICE_ABSENT');
    assert.ok(
      err.message.includes(describeBackend(rt.backends.find((b) => b.kind === 'webgpu')!)),
      err.message,
    );
    assert.ok(err.message.includes(`webgpu: unavailable: ${REASON}`), err.message);
    assert.deepEqual(err.details.devices, ['cpu0']);
  });

  it('refuses a kind this server did not open, and a name that is no device kind', async () => {
    const cuda = await submit({ n: 64, device: 'cuda' });
    assert.equal(cuda.statusCode, 400);
    assert.match(
      (cuda.json() as { error: { message: string } }).error.message,
      /cuda: not opened by this server/,
    );
    const tpu = await submit({ n: 64, device: 'tpu' });
    assert.equal(tpu.statusCode, 400);
    const err = (tpu.json() as { error: { code: string; message: string } }).error;
    assert.equal(err.code, 'TANDEM_ERR_DEVICE_ABSENT');
    assert.match(err.message, /"tpu" is neither a device kind \(cpu, cuda, webgpu\)/);
  });

  it('accepts a kind or an id that is present, and runs the job there', async () => {
    for (const device of ['cpu', 'cpu0']) {
      const res = await submit({ n: 64, device });
      assert.equal(res.statusCode, 202, res.body);
      const job = await waitForJob(t, (res.json() as { id: string }).id);
      assert.equal(job.state, 'succeeded', JSON.stringify(job.error));
    }
  });
});
