import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChromeTrace } from '../../src/obs/trace.js';
import { BackgroundFileWriter } from '../../src/service/obs/file-writer.js';
import { JobTraceCollector } from '../../src/service/obs/job-trace.js';

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

void test('job traces: built and written in batches after the commit, served from memory until then', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-traces-'));
  const traces = new JobTraceCollector(dir);
  try {
    let built = 0;
    const trace = (i: number) => (): ChromeTrace => {
      built++;
      return { traceEvents: [], displayTimeUnit: 'ms', otherData: { i } };
    };
    const names = [0, 1, 2].map((i) => traces.write(`job_${i}`, trace(i)));
    assert.equal(built, 0, 'nothing built on the commit path');
    assert.ok(!existsSync(join(dir, names[1]!)));
    assert.deepEqual(traces.read(names[1]!)?.otherData, { i: 1 }, 'served from memory before its batch');
    await traces.flush();
    assert.equal(built, 3, 'each built once');
    for (const [i, n] of names.entries())
      assert.deepEqual((JSON.parse(readFileSync(join(dir, n), 'utf8')) as ChromeTrace).otherData, { i });
    assert.deepEqual(traces.read(names[2]!)?.otherData, { i: 2 }, 'then from its file');
    assert.equal(traces.read('job_lost.json'), null, 'a file lost in a crash reads as null');
  } finally {
    await traces.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

void test('job traces: serialized one per event-loop turn after their commits, not all at once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-traces-'));
  const traces = new JobTraceCollector(dir);
  try {
    let built = 0;
    const trace = (i: number) => (): ChromeTrace => {
      built++;
      return { traceEvents: [], displayTimeUnit: 'ms', otherData: { i } };
    };
    const names = [0, 1, 2, 3].map((i) => traces.write(`job_${i}`, trace(i)));
    assert.equal(built, 0);
    await new Promise((r) => setImmediate(r));
    assert.equal(built, 1, 'one trace in the first turn');
    await new Promise((r) => setImmediate(r));
    assert.equal(built, 2, 'the next in the next turn');
    await traces.flush();
    assert.equal(built, 4, 'the batch serialized the rest, each once');
    for (const [i, n] of names.entries())
      assert.deepEqual((JSON.parse(readFileSync(join(dir, n), 'utf8')) as ChromeTrace).otherData, { i });
  } finally {
    await traces.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
