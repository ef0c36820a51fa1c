/**
 * The dashboard's model page in headless Chromium: a served model appears in the header's nav, its
 * page lists its version and plots live throughput, batch size and latency while requests flow (the
 * real CPU runtime when it opens). Skips with the reason when Chromium is not installed.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  ARTIFACTS,
  CHROMIUM,
  ensureDashboardBuilt,
  launchChromium,
  serveDashboard,
} from './dashboard-browser.js';
import { randomImage } from './serving-helpers.js';

void test(
  'dashboard: a model page with live throughput, batch sizes and latency; models in the nav',
  {
    skip: existsSync(CHROMIUM) ? false : `Chromium not installed at ${CHROMIUM} (apt-get install chromium)`,
    timeout: 180_000,
  },
  async (t) => {
    ensureDashboardBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    const s = await serveDashboard();
    if (!s.real) {
      await s.close();
      t.skip('the model lane needs the real CPU runtime');
      return;
    }
    const chromium = await launchChromium();
    const page = await chromium.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    let flowing = true;
    try {
      await s.api('POST', '/v1/models', {
        name: 'fashion',
        kind: 'mlp',
        batching: { maxBatchSize: 16, maxQueueDelayUs: 2000 },
      });
      // Requests keep arriving, 8 at a time, while the page is open.
      const load = (async () => {
        while (flowing)
          await Promise.all(
            Array.from({ length: 8 }, (_, k) =>
              s.api('POST', '/v1/models/fashion/infer', { inputs: randomImage(k) }),
            ),
          );
      })();
      await page.goto(s.url);
      await page.fill('#key-input', s.key);
      await page.click('#key-form button');
      await page.waitForSelector('#models-nav a[data-model="fashion"]', { timeout: 15_000 });
      await page.click('#models-nav a[data-model="fashion"]');
      await page.waitForSelector('#model-versions tr[data-version="1"][data-state="ready"]');
      await page.waitForFunction(`Number(document.querySelector('#app')?.dataset.batches) > 3`);
      await page.waitForSelector('#model-throughput canvas');
      await page.waitForSelector('#model-batch canvas');
      await page.waitForSelector('#model-latency canvas');
      assert.match((await page.textContent('#model-figures')) ?? '', /req\/s over 10 s · mean batch \d/);
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-model.png'), fullPage: true });
      flowing = false;
      await load;
      assert.deepEqual(errors, []);
    } finally {
      flowing = false;
      await chromium.close();
      await s.close();
    }
  },
);
