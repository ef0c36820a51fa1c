import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackgroundFileWriter } from '../../src/service/obs/file-writer.js';

void test('background file writer: files land whole, errors come back, close and restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-writer-'));
  const w = new BackgroundFileWriter();
  try {
    const texts = Array.from({ length: 50 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(i * 100) }));
    const errs = await Promise.all(texts.map((t, i) => w.write(join(dir, `f${i}.json`), t)));
    assert.deepEqual(
      errs,
      texts.map(() => null),
    );
    texts.forEach((t, i) => assert.equal(readFileSync(join(dir, `f${i}.json`), 'utf8'), t));
    assert.ok(!existsSync(join(dir, 'f0.json.tmp')), 'no temporary file left');
    const bad = await w.write(join(dir, 'missing-dir', 'x.json'), '{}');
    assert.ok(bad instanceof Error && /ENOENT/.test(bad.message), String(bad));
    assert.equal(w.inFlight, 0);
    await w.close();
    assert.equal(await w.write(join(dir, 'after.json'), '"again"'), null);
    assert.equal(readFileSync(join(dir, 'after.json'), 'utf8'), '"again"');
  } finally {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
