/**
 * A GPU kernel that never ends (issue 19, finding 8), on the fake GPU: its job passes its deadline,
 * cannot stop at a task boundary, and after the grace the watchdog fails it with
 * TANDEM_ERR_DEADLINE_EXCEEDED (noting the hung device and the device seconds charged to the tenant),
 * gives the GPU up for the process and — supervised — the service drains and asks to be relaunched; the
 * other running job stays 'running' for the next process, and closing never waits on the hung kernel.
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

/** One task on cuda; like a custom kernel's job, it waits for its task (no cancellation point inside). */
const gpuKernel = defineJobType<Record<string, never>>({
  name: 'gpu-kernel',
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
  const rt = await Runtime.create({
    backends: [backend],
    calibrate: false,
    cacheDir: dir,
    log: () => undefined,
  });
  const registry = new JobTypeRegistry();
  await registerBuiltinJobTypes(registry);
  registry.register(gpuKernel);
  const config = loadServiceConfig(
    {},
    { dataDir: dir, logLevel: 'silent', durability: 'normal', maxRunningJobs: 4, deadlineGraceMs: 300 },
  );
  const svc = await createService(config, { runtime: rt, registry, ownsRuntime: true, restartOnDeviceLoss });
  const headers = { authorization: `Bearer ${svc.bootstrapKey?.key ?? ''}` };
  const submit = async (payload: object): Promise<JobJson> =>
    (await svc.app.inject({ method: 'POST', url: '/v1/jobs', headers, payload })).json();
  const get = async (id: string, s: Service = svc): Promise<JobJson> =>
    (await s.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers })).json();
  const settle = async (id: string): Promise<JobJson> => {
    for (let i = 0; i < 1000; i++) {
      const j = await get(id);
      if (['succeeded', 'failed', 'cancelled'].includes(j.state)) return j;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`job ${id} did not finish`);
  };
  return { gpu, svc, headers, submit, get, settle };
}

void describe('a GPU kernel that does not end by its deadline', () => {
  void it('supervised: fails the job, charges its tenant, gives the GPU up and asks for a relaunch', async () => {
    const dir = tempDir('tandem-hung-');
    const s = await start(dir, true);
    let closed = false;
    try {
      const ok = await s.settle((await s.submit({ type: 'gpu-kernel' })).id);
      assert.equal(ok.state, 'succeeded', 'the GPU works before the hang');
      const other = await s.submit({ type: 'sleep', params: { ms: 60_000 } });
      while ((await s.get(other.id)).state !== 'running') await new Promise((r) => setTimeout(r, 5));
      let restart: string | null = null;
      void s.svc.restartRequested.then((why) => (restart = why));
      assert.equal(s.svc.kernelHung, false, 'no kernel hung yet');

      s.gpu.autoComplete = false; // the next kernel never finishes: an infinite loop
      const t0 = Date.now();
      const hungId = (await s.submit({ type: 'gpu-kernel', timeoutSeconds: 0.2 })).id;
      // A job whose kernel lands behind the hung one on the GPU: it cannot end in this process.
      const behind = await s.submit({ type: 'gpu-kernel' });
      const hung = await s.settle(hungId);
      const tookMs = Date.now() - t0;
      assert.equal(hung.state, 'failed');
      assert.equal(hung.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
      assert.match(hung.error?.message ?? '', /kernel on cuda0 was still running .* cuda0 was given up/);
      const details = (hung.error as unknown as { details: { hungDevices: string[]; deviceSeconds: number } })
        .details;
      assert.deepEqual(details.hungDevices, ['cuda0']);
      assert.ok(details.deviceSeconds >= 0.4, `charged ${details.deviceSeconds} s`);
      assert.ok(
        tookMs >= 500 && tookMs < 3000,
        `failed ${tookMs} ms after submit (deadline 200 + grace 300)`,
      );

      const why = await s.svc.restartRequested;
      assert.match(why, /cuda0 lost: a kernel of job .* did not end by its deadline \(hung\)/);
      assert.equal(restart, why);
      // What the server tells its supervisor with the relaunch (end it at once: its exit would wait).
      assert.equal(s.svc.kernelHung, true);
      const health = (await s.svc.app.inject({ url: '/healthz' })).json() as {
        status: string;
        devicesLost: string[];
      };
      assert.equal(health.status, 'draining');
      assert.deepEqual(health.devicesLost, ['cuda0']);
      const waiting = await s.submit({ type: 'sleep', params: { ms: 10 } });
      assert.equal((await s.get(other.id)).state, 'running', 'the other job is left for the next process');

      const metrics = (await s.svc.app.inject({ url: '/metrics', headers: s.headers })).body;
      const charged = /tandem_tenant_device_seconds_total\{tenant="admin",device="cuda0"\} ([0-9.e-]+)/.exec(
        metrics,
      );
      assert.ok(
        charged && Number(charged[1]) >= details.deviceSeconds,
        'the tenant is charged the hung time',
      );
      assert.match(metrics, /tandem_jobs_deadline_exceeded_total\{type="gpu-kernel",hung="true"\} 1/);

      assert.equal((await s.get(behind.id)).state, 'running', 'the job behind the hung kernel');
      const c0 = Date.now();
      await s.svc.close(); // must not wait on the hung kernel, nor for the job stuck behind it
      closed = true;
      assert.ok(Date.now() - c0 < 2000, `close took ${Date.now() - c0} ms`);

      // The relaunched process: the failure stands, the rest runs.
      const config = loadServiceConfig({}, { dataDir: dir, logLevel: 'silent', durability: 'normal' });
      const next = await createService(config, { runtime: fakeRuntime() });
      try {
        // Re-queued: the other running job and the one behind the hung kernel; queued: those two and
        // the one submitted while draining.
        assert.deepEqual(next.recovered, { requeued: 2, queued: 3 });
        assert.equal(next.kernelHung, false);
        assert.equal((await s.get(hung.id, next)).state, 'failed', 'the hung job is not re-run');
        for (let i = 0; i < 500 && (await s.get(waiting.id, next)).state !== 'succeeded'; i++)
          await new Promise((r) => setTimeout(r, 10));
        assert.equal((await s.get(waiting.id, next)).state, 'succeeded');
        assert.equal((await s.get(other.id, next)).state, 'running');
      } finally {
        await next.close();
      }
    } finally {
      if (!closed) await s.svc.close();
      // A real server exits here (the driver ends the kernel); the fake GPU's poller would run on. The
      // job queued behind the hung kernel launches once it completes: let that one complete too.
      s.gpu.autoComplete = true;
      s.gpu.complete();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('unsupervised: fails the job and serves on without the GPU', async () => {
    const dir = tempDir('tandem-hung-');
    const s = await start(dir, false);
    try {
      let restart = false;
      void s.svc.restartRequested.then(() => (restart = true));
      s.gpu.autoComplete = false;
      const hung = await s.settle((await s.submit({ type: 'gpu-kernel', timeoutSeconds: 0.1 })).id);
      assert.equal(hung.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
      const health = (await s.svc.app.inject({ url: '/healthz' })).json() as {
        status: string;
        devicesLost: string[];
      };
      assert.equal(health.status, 'ok');
      assert.deepEqual(health.devicesLost, ['cuda0']);
      assert.equal(
        (await s.settle((await s.submit({ type: 'sleep', params: { ms: 5 } })).id)).state,
        'succeeded',
      );
      assert.equal(restart, false);
    } finally {
      await s.svc.close();
      s.gpu.complete();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
