/**
 * The service after a device is lost for the rest of the process (a fake GPU whose driver refuses a new
 * context after a fault, as the H200's does). Supervised: admission closes, the faulted job commits as
 * failed, /healthz says draining, a restart is requested, and the next process re-queues what was running
 * and runs what waited. Unsupervised: the loss shows in /healthz and the service serves on.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { registerBuiltinJobTypes } from '../../src/service/jobs/builtin.js';
import { defineJobType } from '../../src/service/jobs/job-type.js';
import { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { createService, type Service } from '../../src/service/service.js';
import { fakeGpuBackend } from '../runtime/fake-gpu-backend.js';
import { fakeRuntime } from './fake-runtime.js';
import { tempDir, type JobJson } from './helpers.js';

/** A job that runs one task on the GPU; the test decides whether the GPU faults. */
const probe = defineJobType<Record<string, never>>({
  name: 'gpu-probe',
  description: 'one noop task on cuda',
  paramsSchema: { type: 'object', additionalProperties: false, properties: {} },
  parse: () => ({}),
  memoryBytes: () => 0,
  jobClass: () => 'latency',
  requestedDevice: () => 'cuda',
  async run(ctx) {
    await ctx.rt!.submit({ kernel: 'noop', device: 'cuda', tags: ctx.tags }).done;
    return { ok: true };
  },
});

async function start(dir: string, restartOnDeviceLoss: boolean) {
  const { gpu, backend } = fakeGpuBackend();
  gpu.refuseRecovery = true;
  const rt = await Runtime.create({
    backends: [backend],
    calibrate: false,
    cacheDir: dir,
    log: () => undefined,
  });
  const registry = new JobTypeRegistry();
  await registerBuiltinJobTypes(registry);
  registry.register(probe);
  const config = loadServiceConfig(
    {},
    { dataDir: dir, logLevel: 'silent', durability: 'normal', maxRunningJobs: 4 },
  );
  const svc = await createService(config, { runtime: rt, registry, ownsRuntime: true, restartOnDeviceLoss });
  const key = svc.bootstrapKey?.key ?? '';
  const headers = { authorization: `Bearer ${key}` };
  const submit = async (type: string, params: Record<string, unknown> = {}): Promise<JobJson> =>
    (await svc.app.inject({ method: 'POST', url: '/v1/jobs', headers, payload: { type, params } })).json();
  const get = async (id: string, s: Service = svc): Promise<JobJson> =>
    (await s.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers })).json();
  const settle = async (id: string, s: Service = svc): Promise<JobJson> => {
    for (let i = 0; i < 2000; i++) {
      const j = await get(id, s);
      if (['succeeded', 'failed', 'cancelled'].includes(j.state)) return j;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`job ${id} did not finish`);
  };
  return { gpu, svc, config, headers, submit, get, settle };
}

void describe('service after a lost device', () => {
  void it('supervised: fails the faulted job once, drains, asks for a restart; the next start resumes the rest', async () => {
    const dir = tempDir('tandem-loss-');
    const s = await start(dir, true);
    let closed = false;
    try {
      const ok = await s.settle((await s.submit('gpu-probe')).id);
      assert.equal(ok.state, 'succeeded', 'the GPU works before the fault');
      const long = await s.submit('sleep', { ms: 60_000 });
      while ((await s.get(long.id)).state !== 'running') await new Promise((r) => setTimeout(r, 5));
      let restart: string | null = null;
      void s.svc.restartRequested.then((why) => (restart = why));

      s.gpu.faultCode = 700;
      const faulted = await s.settle((await s.submit('gpu-probe')).id);
      assert.equal(faulted.state, 'failed');
      assert.equal(faulted.error?.code, 'TANDEM_ERR_DEVICE_FAULT');
      // Accepted while draining, but not started: it runs after the relaunch.
      const waiting = await s.submit('sleep', { ms: 10 });
      const health = await s.svc.app.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 503);
      const body = health.json() as { status: string; reason: string; devicesLost: string[] };
      assert.equal(body.status, 'draining');
      assert.match(body.reason, /cuda0 lost/);
      assert.deepEqual(body.devicesLost, ['cuda0']);

      const why = await s.svc.restartRequested;
      assert.match(why, /cuda0 lost: .*refused a new context/);
      assert.equal(restart, why);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await s.get(waiting.id)).state, 'queued', 'no job starts while draining');
      assert.equal((await s.get(long.id)).state, 'running');
      await s.svc.close();
      closed = true;

      // The relaunched process (here: a new service on the same data dir, with a working runtime).
      const config = loadServiceConfig({}, { dataDir: dir, logLevel: 'silent', durability: 'normal' });
      const next = await createService(config, { runtime: fakeRuntime() });
      try {
        assert.deepEqual(next.recovered, { requeued: 1, queued: 2 });
        const get = async (id: string): Promise<JobJson> =>
          (await next.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: s.headers })).json();
        assert.equal((await get(faulted.id)).state, 'failed', 'the faulted job is not re-run');
        for (let i = 0; i < 500 && (await get(waiting.id)).state !== 'succeeded'; i++)
          await new Promise((r) => setTimeout(r, 10));
        assert.equal((await get(waiting.id)).state, 'succeeded');
        const resumed = await get(long.id);
        assert.equal(resumed.state, 'running');
        assert.equal(resumed['attempt'], 2);
      } finally {
        await next.close();
      }
    } finally {
      if (!closed) await s.svc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('unsupervised: reports the loss and serves on', async () => {
    const dir = tempDir('tandem-loss-');
    const s = await start(dir, false);
    try {
      let restart = false;
      void s.svc.restartRequested.then(() => (restart = true));
      s.gpu.faultCode = 700;
      const faulted = await s.settle((await s.submit('gpu-probe')).id);
      assert.equal(faulted.error?.code, 'TANDEM_ERR_DEVICE_FAULT');
      const health = await s.svc.app.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 200);
      assert.deepEqual(health.json(), { ...health.json(), status: 'ok', devicesLost: ['cuda0'] });
      const later = await s.settle((await s.submit('sleep', { ms: 10 })).id);
      assert.equal(later.state, 'succeeded');
      const gpuJob = await s.settle((await s.submit('gpu-probe')).id);
      assert.equal(gpuJob.state, 'failed', 'no GPU left in this process');
      assert.notEqual(gpuJob.error?.code, 'TANDEM_ERR_DEVICE_FAULT');
      assert.equal(restart, false);
    } finally {
      await s.svc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
