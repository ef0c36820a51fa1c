/**
 * `tandem models register | list | unload` and `tandem infer` against a listening service on the real
 * CPU runtime: a weights file registered by upload, a request from a JSON file with its batch size
 * and Server-Timing, errors with their codes, and plain `tandem models` still the performance models.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { saveSafetensors } from '../../src/nn/safetensors.js';
import { cpuTestService } from '../service/helpers.js';
import { randomImage } from '../service/serving-helpers.js';
import { runCli } from './cli-process.js';

void test('tandem models register/list/unload and tandem infer', { timeout: 120_000 }, async (t) => {
  const s = await cpuTestService(t);
  if (!s) return;
  const dir = mkdtempSync(join(tmpdir(), 'tandem-models-cli-'));
  try {
    const url = await s.svc.app.listen({ port: 0, host: '127.0.0.1' });
    const env = { TANDEM_URL: url, TANDEM_KEY: s.admin };
    const weights = join(dir, 'w.safetensors');
    const f = (n: number) => new Float32Array(n).map((_, i) => Math.sin(i) * 0.05);
    await saveSafetensors(weights, {
      'fc1.weight': { dtype: 'f32', shape: [16, 784], data: f(16 * 784) },
      'fc1.bias': { dtype: 'f32', shape: [16], data: f(16) },
      'fc2.weight': { dtype: 'f32', shape: [10, 16], data: f(160) },
      'fc2.bias': { dtype: 'f32', shape: [10], data: f(10) },
    });
    const reg = await runCli(
      [
        'models',
        'register',
        'cli-mlp',
        '--kind',
        'mlp',
        '--config',
        '{"sizes":[784,16,10]}',
        '--weights',
        weights,
        '--placement',
        'cpu',
        '--batching',
        '{"maxBatchSize":8}',
        '--json',
      ],
      { env },
    );
    assert.equal(reg.code, 0, reg.stderr);
    const v = JSON.parse(reg.stdout) as {
      version: number;
      state: string;
      source: { type: string };
      batching: { maxBatchSize: number };
    };
    assert.deepEqual([v.version, v.state, v.source.type, v.batching.maxBatchSize], [1, 'ready', 'upload', 8]);

    const input = join(dir, 'image.json');
    writeFileSync(input, JSON.stringify(randomImage(3)));
    const inf = await runCli(
      ['infer', 'cli-mlp', '--input', input, '--model-version', '1', '--priority', '1', '--json'],
      { env },
    );
    assert.equal(inf.code, 0, inf.stderr);
    const out = JSON.parse(inf.stdout) as {
      version: number;
      outputs: { probabilities: number[]; class: number };
      batchSize: number;
      serverTiming: string;
    };
    assert.equal(out.version, 1);
    assert.equal(out.outputs.probabilities.length, 10);
    assert.equal(out.batchSize, 1);
    assert.match(out.serverTiming, /queue;dur=[\d.]+, compute;dur=[\d.]+, serialize;dur=[\d.]+/);
    const human = await runCli(['infer', 'cli-mlp', '--input', input], { env });
    assert.match(human.stdout, /cli-mlp version 1 \(batch of 1; queue;dur=/);

    writeFileSync(input, JSON.stringify({ inputs: [1, 2, 3] }));
    const bad = await runCli(['infer', 'cli-mlp', '--input', input, '--json'], { env });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stdout + bad.stderr, /TANDEM_ERR_SHAPE/);
    const missing = await runCli(['infer', 'nope', '--input', input, '--json'], { env });
    assert.match(missing.stdout + missing.stderr, /TANDEM_ERR_NOT_FOUND/);
    // A --weights path that is no file: was an internal error (ENOENT), or for a directory "cannot reach
    // the service" (the fetch of its stream failed).
    for (const [path, text] of [
      [join(dir, 'absent.onnx'), /--weights .*absent\.onnx: no such file/],
      [dir, /--weights .*: is a directory/],
    ] as const) {
      const r = await runCli(
        ['models', 'register', 'cli-onnx', '--kind', 'onnx', '--weights', path, '--json'],
        { env },
      );
      assert.equal(r.code, 2, r.stdout + r.stderr);
      const e = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
      assert.equal(e.code, 'TANDEM_ERR_INVALID_ARGUMENT');
      assert.match(e.message, text);
    }

    const list = await runCli(['models', 'list'], { env });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /cli-mlp\s+1\s+mlp\s+ready\s+cpu/);
    const unload = await runCli(['models', 'unload', 'cli-mlp', '--json'], { env });
    assert.deepEqual(JSON.parse(unload.stdout), { name: 'cli-mlp', unloaded: [1] });
    const perf = await runCli(['models', '--cache-dir', join(dir, 'none'), '--json'], { env });
    assert.equal(perf.code, 0, perf.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await s.close();
  }
});
