/**
 * The `tandem serve` banner: on the first start of a data dir (the only time the admin key is shown)
 * it prints a line to paste into a shell, `export TANDEM_URL=<url> TANDEM_KEY=<key>`; a later start
 * prints no key and no export line.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadServiceConfig } from '../../src/service/config.js';
import { startServer } from '../../src/service/server.js';
import { tempDir } from '../service/helpers.js';

async function bannerOf(dir: string): Promise<{ lines: string[]; url: string }> {
  const config = loadServiceConfig(
    { TANDEM_BACKENDS: 'none' },
    { dataDir: dir, port: 0, logLevel: 'silent', durability: 'normal' },
  );
  const lines: string[] = [];
  const server = await startServer(config, (l) => lines.push(l));
  await server.stop();
  return { lines, url: server.url };
}

void test('the first start prints export TANDEM_URL=… TANDEM_KEY=…; later starts do not', async () => {
  const dir = tempDir('tandem-banner-');
  try {
    const first = await bannerOf(dir);
    const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
    const exports = first.lines.filter((l) => l.includes('export '));
    assert.deepEqual(exports, [`  export TANDEM_URL=${first.url} TANDEM_KEY=${key}`]);
    assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const second = await bannerOf(dir);
    assert.deepEqual(
      second.lines.filter((l) => l.includes('export ') || l.includes(key)),
      [],
      'no key shown again',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
