/**
 * The dashboard end to end in headless Chromium (Debian's package, driven by playwright-core): paste
 * the key, submit a gemm job from the form, watch it finish on its page (timeline drawn), and save
 * screenshots under dist/test-artifacts/. Skips with the reason when Chromium is not installed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadServiceConfig } from '../../src/service/config.js';
import { openRuntime } from '../../src/service/server.js';
import { createService, type ServiceRuntimeHost } from '../../src/service/service.js';
import { fakeRuntime } from './fake-runtime.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = process.cwd();
const WEB_DIST = join(ROOT, 'web', 'dist');
const ARTIFACTS = join(ROOT, 'dist', 'test-artifacts');

/** Builds web/ when web/dist is missing or older than any of its sources. */
function ensureDashboardBuilt(): void {
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

async function runtimeForTest(dir: string): Promise<ServiceRuntimeHost> {
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
  if (rt && rt.devices.length > 0) return rt;
  console.log(`# dashboard e2e: real CPU runtime unavailable (${reason}); using the test runtime`);
  await rt?.close();
  return fakeRuntime({ taskDelayMs: 300 });
}

void test(
  'dashboard: submit from the page, watch the job finish, see its timeline',
  {
    skip: existsSync(CHROMIUM) ? false : `Chromium not installed at ${CHROMIUM} (apt-get install chromium)`,
    timeout: 120_000,
  },
  async () => {
    ensureDashboardBuilt();
    const { chromium } = await import('playwright-core');
    const dir = mkdtempSync(join(tmpdir(), 'tandem-e2e-'));
    const profile = mkdtempSync(join(tmpdir(), 'tandem-chromium-'));
    const rt = await runtimeForTest(dir);
    const config = loadServiceConfig(
      {},
      { dataDir: dir, port: 0, webDir: WEB_DIST, logLevel: 'silent', durability: 'normal' },
    );
    const svc = await createService(config, { runtime: rt, ownsRuntime: true });
    const url = await svc.app.listen({ host: '127.0.0.1', port: 0 });
    let browser: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | null = null;
    try {
      // A fresh profile dir per run (playwright passes it as --user-data-dir).
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1280, height: 900 },
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
      mkdirSync(ARTIFACTS, { recursive: true });
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(url);
      await page.fill('#key-input', svc.bootstrapKey!.key);
      await page.click('#key-form button');
      await page.waitForSelector('#submit-form');
      await page.selectOption('#job-type', 'gemm');
      await page.fill('[data-param="n"]', '192');
      await page.fill('[data-param="panels"]', '3');
      await page.click('#submit-button');
      const link = await page.waitForSelector('#submitted-link');
      const id = (await link.textContent())!;
      assert.match(id, /^job_/);
      await page.waitForSelector(`tr[data-job="${id}"]`);
      await page.waitForSelector('[data-device]');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-overview.png'), fullPage: true });
      await link.click();
      await page.waitForSelector('#job-head [data-state="succeeded"]', { timeout: 60_000 });
      await page.waitForSelector('#job-result');
      const result = await page.textContent('#job-result');
      assert.match(result ?? '', /"ok": true/);
      await page.waitForTimeout(300);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-job.png'), fullPage: true });
      assert.deepEqual(errors, []);
      const stored = svc.store.get(id);
      assert.equal(stored?.state, 'succeeded');
    } finally {
      await browser?.close();
      await svc.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(profile, { recursive: true, force: true });
    }
  },
);
