/** Test helpers: a service in a fresh temp data dir, keys, and waiting for a job to finish. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadServiceConfig, type ConfigOverrides } from '../../src/service/config.js';
import type { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { createService, type Service, type ServiceRuntimeHost } from '../../src/service/service.js';
import type { TestContext } from 'node:test';
import { openRuntime } from '../../src/service/server.js';
import { fakeRuntime } from './fake-runtime.js';

export interface TestService {
  readonly svc: Service;
  readonly admin: string;
  readonly dir: string;
  auth(key?: string): Record<string, string>;
  close(): Promise<void>;
}

export function tempDir(prefix = 'tandem-svc-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function testService(
  overrides: ConfigOverrides = {},
  runtime: ServiceRuntimeHost | null = fakeRuntime(),
  dir = tempDir(),
  registry?: JobTypeRegistry,
): Promise<TestService> {
  const config = loadServiceConfig(
    {},
    { dataDir: dir, logLevel: 'silent', durability: 'normal', ...overrides },
  );
  const svc = await createService(config, { runtime, ...(registry ? { registry } : {}) });
  const admin = svc.bootstrapKey?.key ?? '';
  return {
    svc,
    admin,
    dir,
    auth: (key = admin) => ({ authorization: `Bearer ${key}` }),
    async close() {
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function createTenant(
  t: TestService,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await t.svc.app.inject({
    method: 'POST',
    url: '/v1/tenants',
    headers: t.auth(),
    payload: { name, ...extra },
  });
  if (res.statusCode !== 201) throw new Error(`creating tenant ${name}: ${res.statusCode} ${res.body}`);
  return (res.json() as { key: string }).key;
}

export interface JobJson {
  id: string;
  state: string;
  progress: number;
  error: { code: string; message: string } | null;
  [k: string]: unknown;
}

export async function waitForJob(
  t: TestService,
  id: string,
  key = t.admin,
  timeoutMs = 20_000,
): Promise<JobJson> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.svc.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: t.auth(key) });
    const job = res.json() as JobJson;
    if (['succeeded', 'failed', 'cancelled'].includes(job.state)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.state} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A service over the real runtime with one CPU worker, in a fresh data dir; null (the test skipped,
 * with the reason) when this machine has no CPU device.
 */
export async function cpuTestService(
  t: TestContext,
  overrides: ConfigOverrides = {},
): Promise<(TestService & { readonly rt: ServiceRuntimeHost }) | null> {
  const dir = tempDir();
  const cfg = loadServiceConfig(
    {},
    {
      dataDir: dir,
      runtime: {
        enabled: true,
        backends: ['cpu'],
        cpuThreads: 1,
        calibrate: false,
        cacheDir: join(dir, 'cache'),
      },
    },
  );
  const { rt, reason } = await openRuntime(cfg);
  if (!rt || rt.devices.length === 0) {
    await rt?.close();
    rmSync(dir, { recursive: true, force: true });
    t.skip(`no CPU device: ${reason}`);
    return null;
  }
  const s = await testService(overrides, rt, dir);
  return {
    ...s,
    rt,
    async close() {
      await s.close();
      await rt.close(); // the service leaves a runtime it was given open
    },
  };
}
