/**
 * Pieces of the dashboard's Chromium test: building web/ when stale, a runtime, a served service with
 * the dashboard, headless Chromium (Debian's package, driven by playwright-core) and API calls.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { loadServiceConfig } from '../../src/service/config.js';
import { openRuntime } from '../../src/service/server.js';
import { createService, type Service, type ServiceRuntimeHost } from '../../src/service/service.js';
import { fakeRuntime } from './fake-runtime.js';

export const CHROMIUM = '/usr/bin/chromium';
const ROOT = process.cwd();
const WEB_DIST = join(ROOT, 'web', 'dist');
export const ARTIFACTS = join(ROOT, 'dist', 'test-artifacts');

/** Builds web/ when web/dist is missing or older than any of its sources. */
export function ensureDashboardBuilt(): void {
  const built = join(WEB_DIST, 'index.html');
  const sources = [
    join(ROOT, 'web', 'index.html'),
    ...readdirSync(join(ROOT, 'web', 'src')).map((f) => join(ROOT, 'web', 'src', f)),
  ];
  if (existsSync(built) && sources.every((f) => statSync(f).mtimeMs <= statSync(built).mtimeMs)) return;
  const r = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', 'web', '--logLevel', 'warn'],
    { stdio: 'inherit' },
  );
  assert.equal(r.status, 0, 'vite build of web/ failed');
}

/** The real CPU runtime, or the test runtime (gemm only) with the reason printed. */
async function runtimeForTest(dir: string): Promise<{ rt: ServiceRuntimeHost; real: boolean }> {
  const config = loadServiceConfig(
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
  const { rt, reason } = await openRuntime(config);
  if (rt && rt.devices.length > 0) return { rt, real: true };
  console.log(`# dashboard e2e: real CPU runtime unavailable (${reason}); using the test runtime`);
  await rt?.close();
  return { rt: fakeRuntime({ taskDelayMs: 300 }), real: false };
}

export interface Served {
  readonly svc: Service;
  readonly url: string;
  readonly key: string;
  /** True on the real CPU runtime (md, option and var can run). */
  readonly real: boolean;
  api<T>(method: string, path: string, body?: unknown, key?: string): Promise<T>;
  close(): Promise<void>;
}

export async function serveDashboard(): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-e2e-'));
  const { rt, real } = await runtimeForTest(dir);
  // Samples every 250 ms so that the plots have a line within the test's few seconds.
  const config = loadServiceConfig(
    {},
    {
      dataDir: dir,
      port: 0,
      webDir: WEB_DIST,
      logLevel: 'silent',
      durability: 'normal',
      historyIntervalMs: 250,
    },
  );
  const svc = await createService(config, { runtime: rt, ownsRuntime: true });
  const url = await svc.app.listen({ host: '127.0.0.1', port: 0 });
  const key = svc.bootstrapKey!.key;
  return {
    svc,
    url,
    key,
    real,
    async api<T>(method: string, path: string, body?: unknown, as = key): Promise<T> {
      const res = await fetch(url + path, {
        method,
        headers: { authorization: `Bearer ${as}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await res.json()) as T;
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    },
    async close() {
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Headless Chromium with a fresh profile (removed by the returned close). */
export async function launchChromium(): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'tandem-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
