/**
 * Checkpoints on the real CPU runtime: a run resumed from a checkpoint gives the same next losses as the
 * uninterrupted run (weights, AdamW moments, step count and data position all restored); a model's
 * parameters round-trip through a file bit for bit; damaged or mismatched checkpoints are clear errors.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import {
  latestCheckpoint,
  loadCheckpoint,
  loadParameters,
  prepareCheckpointDir,
  saveCheckpoint,
  saveParameters,
} from '../../src/nn/checkpoint.js';
import { Nn } from '../../src/nn/context.js';
import { brownCorpusBytes } from '../../src/nn/data/corpus.js';
import { Gpt, gptConfig } from '../../src/nn/models/gpt.js';
import { Trainer, type StepReport, type TrainSpec } from '../../src/nn/train.js';
import { cpuRuntime } from '../runtime/helpers.js';

let rt: Runtime;
let dir: string;
before(async () => {
  rt = await cpuRuntime();
  dir = mkdtempSync(join(tmpdir(), 'tandem-ckpt-'));
});
after(async () => {
  await rt.close();
});

const text = brownCorpusBytes(2);
const spec: TrainSpec = {
  model: 'gpt',
  preset: 'gpt-micro',
  steps: 6,
  batch: 4,
  seqLen: 16,
  lr: 3e-3,
  seed: 9,
};
const data = { kind: 'tokens', train: text } as const;

async function losses(
  t: Trainer,
  from = 0,
  boundary?: (s: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<number[]> {
  const out: StepReport[] = [];
  await t.run((r) => out.push(r), signal, from, boundary);
  return out.map((r) => r.loss);
}

void describe('checkpoints', () => {
  it(
    'resuming at step 3 gives the uninterrupted run’s losses at steps 4–6',
    { timeout: 120_000 },
    async () => {
      const straight = await losses(new Trainer(rt, spec, data));
      // The same run (same schedule) stopped after step 3, as a cancelled job is.
      const first = new Trainer(rt, spec, data);
      const stop = new AbortController();
      const before = await losses(
        first,
        0,
        async (s) => {
          if (s === 3) {
            await saveCheckpoint(first, join(dir, 'run'), s);
            stop.abort();
          }
        },
        stop.signal,
      );
      assert.deepEqual(before, straight.slice(0, 3));
      const file = latestCheckpoint(join(dir, 'run'));
      assert.ok(file !== null && file.endsWith('step-00000003.safetensors'));
      const resumed = new Trainer(rt, spec, data);
      assert.equal(await loadCheckpoint(resumed, file), 3);
      const rest = await losses(resumed, 3);
      assert.equal(rest.length, 3);
      rest.forEach((l, i) =>
        assert.ok(
          Math.abs(l - straight[i + 3]!) <= 1e-6 * Math.abs(l),
          `step ${i + 4}: resumed ${l}, straight ${straight[i + 3]}`,
        ),
      );
      // and not trivially: the steps differ from each other
      assert.notEqual(straight[3], straight[5]);
    },
  );

  it('with a recorded step (staticStep): a checkpoint at step 3 and its resumption follow the plain run', async () => {
    const straight = await losses(new Trainer(rt, spec, data));
    const recorded = { ...spec, staticStep: true };
    const first = new Trainer(rt, recorded, data);
    const stop = new AbortController();
    const before = await losses(
      first,
      0,
      async (s) => {
        if (s === 3) {
          await saveCheckpoint(first, join(dir, 'static'), s);
          stop.abort();
        }
      },
      stop.signal,
    );
    first.dispose();
    assert.deepEqual(before, straight.slice(0, 3));
    const file = latestCheckpoint(join(dir, 'static'))!;
    const resumed = new Trainer(rt, recorded, data);
    assert.equal(await loadCheckpoint(resumed, file), 3);
    // The step recorded after the load replays from the loaded weights, moments and step count.
    assert.deepEqual(await losses(resumed, 3), straight.slice(3));
    resumed.dispose();
  });

  it('parameters round-trip through a safetensors file bit for bit (bf16 too)', async () => {
    for (const precision of ['f32', 'bf16'] as const) {
      const a = new Gpt(new Nn(rt, { precision, seed: 1 }), gptConfig('gpt-micro'));
      const b = new Gpt(new Nn(rt, { precision, seed: 2 }), gptConfig('gpt-micro'));
      const path = join(dir, `params-${precision}.safetensors`);
      await saveParameters(a, rt, path);
      await loadParameters(b, path);
      const pa = a.namedParameters();
      const pb = b.namedParameters();
      for (let i = 0; i < pa.length; i++)
        assert.deepEqual(await rt.read(pb[i]![1].data), await rt.read(pa[i]![1].data), pa[i]![0]);
    }
  });

  it('a truncated file, a wrong model, a missing tensor: TANDEM_ERR_BAD_CHECKPOINT', async () => {
    const t = new Trainer(rt, { ...spec, steps: 1 }, data);
    const path = await saveCheckpoint(t, join(dir, 'bad'), 1);
    const bytes = readFileSync(path);
    writeFileSync(join(dir, 'cut.safetensors'), bytes.subarray(0, bytes.length - 100));
    await assert.rejects(loadCheckpoint(t, join(dir, 'cut.safetensors')), (e) =>
      isTandemError(e, 'TANDEM_ERR_BAD_CHECKPOINT'),
    );
    const other = new Trainer(rt, { ...spec, steps: 1, precision: 'f64' }, data);
    await assert.rejects(
      loadCheckpoint(other, path),
      (e) => isTandemError(e, 'TANDEM_ERR_BAD_CHECKPOINT') && /precision/.test(e.message),
    );
    // Metadata that is not JSON where JSON is expected: was a SyntaxError (an internal error).
    for (const key of ['spec', 'lossScale']) {
      const n = Number(bytes.readBigUInt64LE(0));
      const header = JSON.parse(bytes.subarray(8, 8 + n).toString()) as {
        __metadata__: Record<string, string>;
      };
      header.__metadata__[key] = '{"model": "gpt", "preset":';
      const text = Buffer.from(JSON.stringify(header));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(text.length));
      const damaged = join(dir, `meta-${key}.safetensors`);
      writeFileSync(damaged, Buffer.concat([len, text, bytes.subarray(8 + n)]));
      await assert.rejects(
        loadCheckpoint(t, damaged),
        (e) =>
          isTandemError(e, 'TANDEM_ERR_BAD_CHECKPOINT') &&
          e.message.includes(`metadata ${key} is not valid JSON`),
      );
    }
    const small = new Gpt(new Nn(rt, { precision: 'f32' }), gptConfig('gpt-micro', { layers: 3 }));
    await assert.rejects(
      loadParameters(small, path),
      (e) => isTandemError(e, 'TANDEM_ERR_BAD_CHECKPOINT') && /h\.2\./.test(e.message),
    );
  });

  it('a checkpoint directory that is a file: INVALID_ARGUMENT before a run, and when saving', async () => {
    // Before: the CLI trained every step, then failed with an internal EEXIST from mkdir.
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    for (const target of [file, join(file, 'below')])
      assert.throws(
        () => prepareCheckpointDir(target),
        (e) =>
          isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT') &&
          /a file \(not a directory\) is in the way/.test(e.message),
      );
    const t = new Trainer(rt, { ...spec, steps: 1 }, data);
    await assert.rejects(saveCheckpoint(t, file, 1), (e) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'));
    prepareCheckpointDir(join(dir, 'fresh', 'deeper'));
    assert.equal(latestCheckpoint(join(dir, 'fresh', 'deeper')), null);
  });
});
