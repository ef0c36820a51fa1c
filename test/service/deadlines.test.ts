/**
 * Job deadlines (issue 19, finding 2): every job has one (timeoutSeconds, else its type's default, never
 * above its tenant's maximum); past it the job fails with TANDEM_ERR_DEADLINE_EXCEEDED and its slot is
 * freed; a job that ignores its signal is failed after the grace; the deadline survives a restart.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { loadServiceConfig } from '../../src/service/config.js';
import { registerBuiltinJobTypes } from '../../src/service/jobs/builtin.js';
import { defineJobType } from '../../src/service/jobs/job-type.js';
import { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { createService, type Service } from '../../src/service/service.js';
import { fakeRuntime } from './fake-runtime.js';
import { createTenant, tempDir, testService, waitForJob, type JobJson, type TestService } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function submit(t: TestService, payload: object, key = t.admin) {
  return t.svc.app.inject({ method: 'POST', url: '/v1/jobs', headers: t.auth(key), payload });
}

async function get(t: TestService, id: string): Promise<JobJson> {
  return (await t.svc.app.inject({ url: `/v1/jobs/${id}`, headers: t.auth() })).json() as JobJson;
}

async function untilState(t: TestService, id: string, state: string): Promise<JobJson> {
  for (let i = 0; i < 2000; i++) {
    const j = await get(t, id);
    if (j.state === state) return j;
    await sleep(5);
  }
  throw new Error(`job ${id} never ${state}`);
}

/** A job that never looks at its signal (a stand-in for work that cannot be interrupted). */
const deaf = defineJobType<Record<string, never>>({
  name: 'deaf',
  description: 'waits forever, ignoring its signal',
  paramsSchema: { type: 'object', additionalProperties: false, properties: {} },
  parse: () => ({}),
  memoryBytes: () => 0,
  jobClass: () => 'latency',
  run: () => new Promise<never>(() => undefined),
});

void describe('job deadlines', () => {
  void it('timeoutSeconds: type defaults, the tenant maximum (400 above it), shown on the job', async () => {
    const t = await testService({ maxRunningJobs: 1 });
    try {
      const key = await createTenant(t, 'bounded', { maxTimeoutSeconds: 60 });
      const tenants = (await t.svc.app.inject({ url: '/v1/tenants', headers: t.auth() })).json() as {
        tenants: { name: string; maxTimeoutSeconds: number }[];
      };
      assert.equal(tenants.tenants.find((x) => x.name === 'bounded')?.maxTimeoutSeconds, 60);

      const over = await submit(t, { type: 'sleep', params: { ms: 1 }, timeoutSeconds: 61 }, key);
      assert.equal(over.statusCode, 400, over.body);
      const err = (over.json() as { error: { code: string; message: string } }).error;
      assert.equal(err.code, 'TANDEM_ERR_LIMIT');
      assert.match(err.message, /timeoutSeconds 61 is above the tenant's maximum of 60 s/);
      const zero = await submit(t, { type: 'sleep', params: { ms: 1 }, timeoutSeconds: 0 }, key);
      assert.equal(zero.statusCode, 400);

      // No timeoutSeconds: the type's default (sleep: 120 s), lowered to the tenant's maximum.
      const dflt = (await submit(t, { type: 'sleep', params: { ms: 1 } }, key)).json() as JobJson;
      assert.equal(dflt['timeoutSeconds'], 60);
      const adminSleep = (await submit(t, { type: 'sleep', params: { ms: 1 } })).json() as JobJson;
      assert.equal(adminSleep['timeoutSeconds'], 120);
      const option = (await submit(t, { type: 'gemm', params: { n: 4 } })).json() as JobJson;
      assert.equal(option['timeoutSeconds'], 300);
      const given = (await submit(t, { type: 'sleep', params: { ms: 1 }, timeoutSeconds: 2.5 }, key)).json();
      assert.equal((given as JobJson)['timeoutSeconds'], 2.5);
      assert.equal((given as JobJson)['deadline'], null, 'the deadline is set when the job starts');
      const done = await waitForJob(t, (given as JobJson).id);
      assert.equal(done.state, 'succeeded');
      const started = Date.parse(done['startedAt'] as string);
      assert.equal(Date.parse(done['deadline'] as string), started + 2500);
    } finally {
      await t.close();
    }
  });

  void it('two 600 s sleeps stop at their deadline, free both slots, and the next job runs', async () => {
    const t = await testService({ maxRunningJobs: 2 });
    try {
      const a = (await submit(t, { type: 'sleep', params: { ms: 600_000 }, timeoutSeconds: 0.3 })).json();
      const b = (await submit(t, { type: 'sleep', params: { ms: 600_000 }, timeoutSeconds: 0.3 })).json();
      const next = (await submit(t, { type: 'sleep', params: { ms: 1 } })).json() as JobJson;
      await untilState(t, (a as JobJson).id, 'running');
      assert.equal((await get(t, next.id)).state, 'queued', 'both slots are held');
      const t0 = Date.now();
      for (const j of [a, b] as JobJson[]) {
        const done = await waitForJob(t, j.id, t.admin, 5000);
        assert.equal(done.state, 'failed');
        assert.equal(done.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
        assert.match(done.error?.message ?? '', /timeoutSeconds 0\.3/);
        assert.ok((done['runSeconds'] as number) < 1.5, `ran ${done['runSeconds'] as number} s`);
      }
      assert.equal((await waitForJob(t, next.id, t.admin, 5000)).state, 'succeeded');
      assert.ok(Date.now() - t0 < 3000);
      const metrics = await t.svc.app.inject({ url: '/metrics', headers: t.auth() });
      assert.match(metrics.body, /tandem_jobs_deadline_exceeded_total\{type="sleep",hung="false"\} 2/);
    } finally {
      await t.close();
    }
  });

  void it('a job that ignores its signal is failed after the grace and its slot freed', async () => {
    const dir = tempDir();
    const registry = new JobTypeRegistry();
    await registerBuiltinJobTypes(registry);
    registry.register(deaf);
    const config = loadServiceConfig(
      {},
      { dataDir: dir, logLevel: 'silent', durability: 'normal', maxRunningJobs: 1, deadlineGraceMs: 200 },
    );
    const svc = await createService(config, { runtime: fakeRuntime(), registry });
    const t: TestService = {
      svc,
      admin: svc.bootstrapKey?.key ?? '',
      dir,
      auth: (key = svc.bootstrapKey?.key ?? '') => ({ authorization: `Bearer ${key}` }),
      close: async () => {
        await svc.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
    try {
      const stuck = (await submit(t, { type: 'deaf', timeoutSeconds: 0.2 })).json() as JobJson;
      const next = (await submit(t, { type: 'sleep', params: { ms: 1 } })).json() as JobJson;
      const done = await waitForJob(t, stuck.id, t.admin, 5000);
      assert.equal(done.state, 'failed');
      assert.equal(done.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
      assert.match(
        done.error?.message ?? '',
        /did not stop within 200 ms of its deadline; its slot was freed/,
      );
      assert.equal((await waitForJob(t, next.id, t.admin, 5000)).state, 'succeeded');
    } finally {
      await t.close();
    }
  });

  void it('the deadline survives a restart: kept on re-run, and a job whose time ran out is failed', async () => {
    const dir = tempDir();
    const open = async (): Promise<Service> =>
      createService(loadServiceConfig({}, { dataDir: dir, logLevel: 'silent', durability: 'normal' }), {
        runtime: fakeRuntime(),
      });
    let svc = await open();
    const headers = { authorization: `Bearer ${svc.bootstrapKey?.key ?? ''}` };
    const view = async (s: Service, id: string): Promise<JobJson> =>
      (await s.app.inject({ url: `/v1/jobs/${id}`, headers })).json() as JobJson;
    try {
      const post = async (timeoutSeconds: number): Promise<JobJson> =>
        (
          await svc.app.inject({
            method: 'POST',
            url: '/v1/jobs',
            headers,
            payload: { type: 'sleep', params: { ms: 600_000 }, timeoutSeconds },
          })
        ).json() as JobJson;
      const short = await post(0.4);
      const long = await post(30);
      let first: JobJson = await view(svc, long.id);
      while (first.state !== 'running' || (await view(svc, short.id)).state !== 'running') {
        await sleep(5);
        first = await view(svc, long.id);
      }
      await svc.close(); // both stay 'running' in the database, as after a crash
      await sleep(500); // the short job's deadline passes while the service is down

      svc = await open();
      assert.deepEqual(svc.recovered, { requeued: 2, queued: 2 });
      const expired = await (async () => {
        for (let i = 0; i < 500; i++) {
          const j = await view(svc, short.id);
          if (j.state === 'failed') return j;
          await sleep(5);
        }
        throw new Error('the expired job was not failed');
      })();
      assert.equal(expired.error?.code, 'TANDEM_ERR_DEADLINE_EXCEEDED');
      assert.match(expired.error?.message ?? '', /re-queued by a restart/);
      let again = await view(svc, long.id);
      while (again.state !== 'running') {
        await sleep(5);
        again = await view(svc, long.id);
      }
      assert.equal(again['attempt'], 2);
      assert.equal(again['deadline'], first['deadline'], 'the re-run keeps the first start’s deadline');
    } finally {
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
