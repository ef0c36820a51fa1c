/** Performance models: robust history, regression, roofline prior, persistence and bad files. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bucket, PerfModels, fitPowerLaw, type TaskShape } from '../../src/runtime/perf-model.js';
import { loadModels, modelFile, saveModels, PERF_MODEL_VERSION } from '../../src/runtime/perf-model-store.js';
import { Runtime } from '../../src/runtime/runtime.js';

const shape = (n: number): TaskShape => ({
  op: 'gemm',
  footprint: `f32:${n}`,
  size: 2 * n ** 3,
  flops: 2 * n ** 3,
  bytes: 12 * n * n,
  dtype: 'f32',
});

test('a timing spike is rejected and does not move the estimate (StarPU #50)', () => {
  const b = new Bucket(1);
  for (let i = 0; i < 20; i++) assert.ok(b.add(190 + (i % 5)));
  const before = b.medianUs;
  assert.equal(b.add(80_000), false, '400x spike must be rejected');
  assert.equal(b.add(100_000), false);
  assert.equal(b.medianUs, before);
  assert.equal(b.rejected, 2);
  assert.ok(b.madUs < 5, `MAD ${b.madUs}`);
});

test('a lasting change of speed is adopted after a run of rejections', () => {
  const b = new Bucket(1);
  for (let i = 0; i < 10; i++) b.add(100);
  for (let i = 0; i < 8; i++) b.add(1000);
  assert.equal(b.medianUs, 1000);
});

test('regression a*n^b between measured sizes, roofline prior before enough samples', () => {
  const m = new PerfModels();
  const slot = m.device('gpu0:test', { flops: { f32: 1e12 }, bandwidth: 1e11, launchUs: 5 });
  // No samples: the roofline prior (2·512³ / 1e12 s = 268 µs + 5 µs).
  const prior = m.estimate(shape(512), slot);
  assert.equal(prior.source, 'roofline');
  assert.ok(Math.abs(prior.us - 273.4) < 1, `prior ${prior.us}`);
  // Measured at 256 and 1024 following t = 1e-6 · flops (b = 1 in flops): 512 is interpolated.
  for (const n of [256, 1024]) for (let i = 0; i < 3; i++) m.record(shape(n), slot, 2 * n ** 3 * 1e-6);
  const mid = m.estimate(shape(512), slot);
  assert.equal(mid.source, 'regression');
  assert.ok(Math.abs(mid.us - 2 * 512 ** 3 * 1e-6) / mid.us < 0.01, `regression ${mid.us}`);
  const fit = fitPowerLaw([
    [10, 1000],
    [20, 8000],
  ]);
  assert.ok(fit && Math.abs(fit.b - 3) < 1e-9);
  // Once the bucket itself has samples, its median wins.
  for (let i = 0; i < 3; i++) m.record(shape(512), slot, 50);
  assert.deepEqual(m.estimate(shape(512), slot), { us: 50, source: 'history' });
});

test('models persist, and a corrupt or stale file is ignored with a warning', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-models-'));
  const file = modelFile(dir);
  const m = new PerfModels();
  const slot = m.device('cpu0:x');
  for (let i = 0; i < 5; i++) m.record(shape(64), slot, 10 + i);
  saveModels(file, m);
  const back = new PerfModels();
  assert.equal(loadModels(file, back).loaded, 1);
  assert.equal(back.estimate(shape(64), back.device('cpu0:x')).us, 12);

  writeFileSync(file, '{"version": 1, "entries": [');
  const r1 = loadModels(file, new PerfModels());
  assert.equal(r1.loaded, 0);
  assert.match(r1.warning ?? '', /corrupt/);
  writeFileSync(file, JSON.stringify({ version: PERF_MODEL_VERSION + 99, entries: [] }));
  assert.match(loadModels(file, new PerfModels()).warning ?? '', /version/);
  writeFileSync(file, JSON.stringify({ version: PERF_MODEL_VERSION, entries: [{ op: 1 }] }));
  assert.match(loadModels(file, new PerfModels()).warning ?? '', /malformed/);
});

test('the runtime warns about a corrupt model file, learns, and rewrites it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-rt-models-'));
  writeFileSync(modelFile(dir), 'not json at all');
  const logs: string[] = [];
  const rt = await Runtime.create({
    backends: ['cpu'],
    calibrate: false,
    cacheDir: dir,
    options: { cpu: { threads: 1 } },
    log: (m) => logs.push(m),
  });
  try {
    assert.ok(
      logs.some((l) => /perf-models\.json is corrupt/.test(l)),
      logs.join('\n'),
    );
    const x = rt.tensor([64, 64], 'f32', new Float32Array(64 * 64).fill(1));
    for (let i = 0; i < 4; i++) rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1.5 } });
    await rt.idle();
  } finally {
    await rt.close();
  }
  const saved = JSON.parse(readFileSync(modelFile(dir), 'utf8')) as { version: number; entries: unknown[] };
  assert.equal(saved.version, PERF_MODEL_VERSION);
  assert.ok(saved.entries.length >= 1);
});

test('median and MAD equal the sorted definitions for any history length (ties, odd and even)', () => {
  const med = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length & 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  let seed = 12345;
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 100;
  for (let n = 1; n <= 32; n++) {
    for (let trial = 0; trial < 20; trial++) {
      // Some trials with ties (rounded values), some with spikes.
      const ring = Array.from({ length: n }, () => (trial % 3 === 0 ? Math.round(rnd() / 10) : rnd()));
      if (trial % 4 === 1) ring[0] = 1e6;
      const b = Bucket.from({ size: 1, ring, rejected: 0, total: n });
      const m = med(ring);
      assert.equal(b.medianUs, m, `median n=${n}`);
      assert.equal(b.madUs, med(ring.map((x) => Math.abs(x - m))), `MAD n=${n} ${ring.join(',')}`);
    }
  }
});
