/**
 * The dashboard end to end in headless Chromium: the device plots (uPlot canvases with time and value
 * axes, fed by GET /v1/devices/history), a job submitted from the form finishing with the device it ran
 * on in the list, the list's filters and paging, a cancel shown as cancelled, and md, option and var
 * job pages with their task spans and progress (on the real CPU runtime). Screenshots go to
 * dist/test-artifacts/. Skips with the reason when Chromium is not installed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { EXAMPLE_PORTFOLIO } from '../../src/workloads/index.js';
import {
  ARTIFACTS,
  CHROMIUM,
  ensureDashboardBuilt,
  launchChromium,
  serveDashboard,
} from './dashboard-browser.js';

interface JobJson {
  id: string;
  state: string;
  type: string;
  tenant: string;
}

/** Pixels of a canvas that are not fully transparent. */
async function paintedPixels(page: Page, selector: string): Promise<number> {
  // Browser-side code as a string: the test's TypeScript has no DOM library.
  return page.evaluate(`(() => {
    const c = document.querySelector(${JSON.stringify(selector)});
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
    return n;
  })()`);
}

/** Waits until the list's "1–20 of 25" line reads as `expected` says. */
const pageInfo = (page: Page, expected: RegExp) =>
  page.waitForFunction(
    `${expected.toString()}.test(document.querySelector('#jobs-page')?.textContent ?? '')`,
  );

const disabled = (page: Page, selector: string, prop: 'disabled' | 'hidden'): Promise<boolean> =>
  page.evaluate(`document.querySelector(${JSON.stringify(selector)}).${prop}`);

const rowsOf = (page: Page): Promise<{ id: string; state: string; type: string; tenant: string }[]> =>
  page.$$eval('#jobs-body tr[data-job]', (rows) =>
    rows.map((r) => ({
      id: r.getAttribute('data-job')!,
      state: r.getAttribute('data-state')!,
      type: r.children[1]!.textContent!,
      tenant: r.children[2]!.textContent!,
    })),
  );

void test(
  'dashboard in Chromium',
  {
    skip: existsSync(CHROMIUM) ? false : `Chromium not installed at ${CHROMIUM} (apt-get install chromium)`,
    timeout: 240_000,
  },
  async (t) => {
    ensureDashboardBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    const s = await serveDashboard();
    const chromium = await launchChromium();
    const page = await chromium.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    try {
      await page.goto(s.url);
      await page.fill('#key-input', s.key);
      const firstHistory = page.waitForResponse((r) => r.url().includes('/v1/devices/history'));
      await page.click('#key-form button');
      await page.waitForSelector('#submit-form');

      await t.test(
        'device plots: canvases with time and value axes, fed by the history endpoint',
        async () => {
          const history = (await (await firstHistory).json()) as { devices: { id: string }[] };
          assert.ok(history.devices.length > 0, 'the history holds a device');
          // Later polls ask only for what is new.
          await page.waitForResponse((r) => /\/v1\/devices\/history\?since=\d+$/.test(r.url()));
          for (const id of ['plot-utilization', 'plot-memory', 'plot-queue']) {
            await page.waitForSelector(`#${id} .uplot canvas`);
            assert.ok((await paintedPixels(page, `#${id} .uplot canvas`)) > 2000, `${id} is drawn`);
            // The legend names the devices the endpoint returned.
            const legend = await page.$$eval(`#${id} .u-legend .u-label`, (els) =>
              els.map((e) => e.textContent),
            );
            for (const d of history.devices)
              assert.ok(
                legend.some((l) => l?.startsWith(d.id)),
                `${id} legend ${JSON.stringify(legend)} lacks ${d.id}`,
              );
            const box = await page.$(`#${id}`);
            const x = (await box!.getAttribute('data-x-ticks')) ?? '';
            const y = (await box!.getAttribute('data-y-ticks')) ?? '';
            assert.match(x, /^\d\d:\d\d(:\d\d)?(\|\d\d:\d\d(:\d\d)?)*$/, `${id} time axis: ${x}`);
            assert.ok(y.split('|').length >= 2, `${id} value axis: ${y}`);
          }
          assert.match((await page.$eval('#plot-utilization', (e) => e.dataset['yTicks']))!, /%/);
          assert.match((await page.$eval('#plot-memory', (e) => e.dataset['yTicks']))!, /B/);
        },
      );

      await t.test('a job from the form finishes; the list shows the device it ran on', async () => {
        await page.selectOption('#job-type', 'gemm');
        await page.fill('[data-param="n"]', s.real ? '384' : '96');
        await page.fill('[data-param="panels"]', '3');
        await page.click('#submit-button');
        const id = (await (await page.waitForSelector('#submitted-link')).textContent())!;
        assert.match(id, /^job_/);
        await page.waitForSelector(`tr[data-job="${id}"][data-state="succeeded"]`, { timeout: 60_000 });
        const device = await page.textContent(`tr[data-job="${id}"] .device-cell`);
        assert.match(device ?? '', /^cpu\d+$/, `device column: ${device}`);
        assert.equal(device, s.svc.store.get(id)?.device);
        await pageInfo(page, /^1–1 of 1$/); // the total keeps up with a job that came after it was counted
        await page.waitForTimeout(1200); // a few more samples in the plots
        await shot('dashboard-overview');
        await page.click('#submitted-link');
        await page.waitForSelector('#job-head [data-state="succeeded"]', { timeout: 60_000 });
        assert.match((await page.textContent('#job-result')) ?? '', /"ok": true/);
        assert.match((await page.textContent('#job-message')) ?? '', /on cpu\d+/);
        await page.goto(`${s.url}/#/`);
      });

      await t.test('filters and paging change the list', async () => {
        const bob = (await s.api<{ key: string }>('POST', '/v1/tenants', { name: 'bob' })).key;
        for (let i = 0; i < 23; i++) await s.api('POST', '/v1/jobs', { type: 'sleep', params: { ms: 1 } });
        for (let i = 0; i < 2; i++)
          await s.api('POST', '/v1/jobs', { type: 'sleep', params: { ms: 1 } }, bob);
        await page.reload(); // the tenant filter lists bob
        await page.waitForSelector('#jobs-body tr[data-job]');
        await page.selectOption('#filter-type', 'sleep');
        await pageInfo(page, /^1–20 of 25$/);
        let rows = await rowsOf(page);
        assert.equal(rows.length, 20);
        assert.ok(rows.every((r) => r.type === 'sleep'));
        await page.click('#jobs-older');
        await pageInfo(page, /^21–25 of 25$/);
        const second = await rowsOf(page);
        assert.equal(second.length, 5);
        assert.ok(
          second.every((r) => !rows.some((f) => f.id === r.id)),
          'page 2 repeats none of page 1',
        );
        assert.ok(await disabled(page, '#jobs-older', 'disabled'));
        await page.screenshot({ path: join(ARTIFACTS, 'dashboard-jobs-page2.png') });
        await page.click('#jobs-newer');
        await pageInfo(page, /^1–20 of 25$/);
        // Tenant (the admin sees the filter): bob's two.
        await page.waitForSelector('#filter-tenant-box:not([hidden])');
        await page.selectOption('#filter-tenant', 'bob');
        await pageInfo(page, /^1–2 of 2$/);
        rows = await rowsOf(page);
        assert.deepEqual(
          rows.map((r) => r.tenant),
          ['bob', 'bob'],
        );
        await page.selectOption('#filter-tenant', '');
        await page.selectOption('#filter-type', '');
        await page.selectOption('#filter-state', 'succeeded');
        await pageInfo(page, /^1–20 of 2[6-9]$/);
        assert.ok((await rowsOf(page)).every((r) => r.state === 'succeeded'));
        await page.selectOption('#filter-state', '');
      });

      await t.test('a cancelled job shows as cancelled', async () => {
        const job = await s.api<JobJson>('POST', '/v1/jobs', { type: 'sleep', params: { ms: 60_000 } });
        await page.goto(`${s.url}/#/jobs/${job.id}`);
        await page.waitForSelector('#job-head [data-state="running"]');
        await page.click('#cancel-job');
        await page.waitForSelector('#job-head [data-state="cancelled"]', { timeout: 10_000 });
        await page.waitForSelector('#job-cancelled');
        assert.ok(await disabled(page, '#cancel-job', 'hidden'), 'no cancel button');
        assert.equal(s.svc.store.get(job.id)?.state, 'cancelled');
        await shot('dashboard-cancelled');
        await page.goto(`${s.url}/#/`);
        await page.selectOption('#filter-state', 'cancelled');
        await page.waitForSelector(`#jobs-body tr[data-job="${job.id}"][data-state="cancelled"]`);
        await page.selectOption('#filter-state', '');
      });

      const workloads = [
        {
          type: 'md',
          params: { preset: 'lj-small', steps: 1200, thermoEvery: 200 },
          progress: /step (\d+)\/1200/,
        },
        // Long enough that the page, loaded after the submit, still sees the job run: at 20M paths
        // and 2M scenarios both finished before the page had loaded on a faster 2-core machine.
        { type: 'option', params: { paths: 200_000_000, tasks: 12 }, progress: /task (\d+)\/(\d+)/ },
        {
          type: 'var',
          params: { portfolio: EXAMPLE_PORTFOLIO, scenarios: 16_000_000, tasks: 12 },
          progress: /task (\d+)\/(\d+)/,
        },
      ];
      for (const w of workloads)
        await t.test(
          `${w.type} job page: task spans on the device's tracks and progress while it runs`,
          { skip: s.real ? false : 'md, option and var need the real CPU runtime' },
          async () => {
            const job = await s.api<JobJson>('POST', '/v1/jobs', { type: w.type, params: w.params });
            await page.goto(`${s.url}/#/jobs/${job.id}`);
            await page.waitForSelector('#job-message');
            // Every text the progress line shows, recorded as the page updates it.
            await page.evaluate(`(() => {
              const el = document.querySelector('#job-message');
              window.seen = [];
              new MutationObserver(() => window.seen.push(el.textContent)).observe(el, {
                childList: true, characterData: true, subtree: true,
              });
            })()`);
            if (w.type === 'md') {
              // Mid-run: progress between 0 and 100 % and the timeline so far.
              await page.waitForFunction(`window.seen.some((t) => / [1-9][0-9]?% step /.test(t))`);
              await page.waitForTimeout(2100); // the running timeline redraws every 2 s
              await shot('dashboard-md-running');
            }
            await page.waitForSelector('#job-head [data-state="succeeded"]', { timeout: 120_000 });
            await page.waitForFunction(`Number(document.querySelector('#timeline')?.dataset.spans) > 4`);
            const seen = await page.evaluate<string[]>('window.seen');
            const partial = seen.filter((text) => {
              const m = w.progress.exec(text);
              return m && !/ 100% /.test(text) && !/ 0% /.test(text);
            });
            assert.ok(
              partial.length > 0,
              `${w.type}: no progress seen while running: ${JSON.stringify(seen)}`,
            );
            const tracks = ((await page.getAttribute('#timeline', 'data-tracks')) ?? '').split('|');
            assert.ok(
              tracks.some((n) => !n.startsWith('job ')),
              `${w.type}: only job tracks: ${JSON.stringify(tracks)}`,
            );
            assert.ok((await paintedPixels(page, '#timeline')) > 5000);
            assert.match((await page.textContent('#job-message')) ?? '', /100% succeeded · on cpu\d+/);
            await shot(`dashboard-${w.type}`);
          },
        );
      await t.test(
        'train job page: the loss curve grows with the steps',
        { skip: s.real ? false : 'train needs the real CPU runtime' },
        async () => {
          const job = await s.api<JobJson>('POST', '/v1/jobs', {
            type: 'train',
            params: { model: 'gpt', preset: 'gpt-mini', steps: 6, batch: 2, seqLen: 16 },
          });
          await page.goto(`${s.url}/#/jobs/${job.id}`);
          await page.waitForSelector('#job-head [data-state="succeeded"]', { timeout: 180_000 });
          await page.waitForFunction(`Number(document.querySelector('#loss-curve')?.dataset.points) === 6`);
          const last = Number(await page.getAttribute('#loss-curve', 'data-last-loss'));
          assert.ok(last > 0 && last < 11.5, `last loss ${last}`);
          assert.ok((await paintedPixels(page, '#loss-curve canvas')) > 500);
          await shot('dashboard-train');
        },
      );
      await t.test(
        'a failing history endpoint is said on the plots; the rest of the page works',
        async () => {
          const body = JSON.stringify({ error: { code: 'TANDEM_ERR_INTERNAL', message: 'history broke' } });
          await page.route('**/v1/devices/history**', (r) =>
            r.fulfill({ status: 500, contentType: 'application/json', body }),
          );
          await page.goto(`${s.url}/#/`);
          await page.reload();
          await page.waitForSelector('.plot-error');
          assert.match((await page.textContent('.plot-error')) ?? '', /history broke/);
          await page.waitForSelector('#jobs-body tr[data-job]');
          await page.waitForSelector('[data-device]');
          await page.unroute('**/v1/devices/history**');
          await page.waitForSelector('.plot-error', { state: 'detached' });
        },
      );
      assert.deepEqual(errors, []);
    } finally {
      await chromium.close();
      await s.close();
    }
  },
);
