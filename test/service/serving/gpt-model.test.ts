/**
 * Model kind 'gpt' on the CPU (gpt-micro, f32): parse accepts tokens or text and refuses bad items with
 * stable codes; a ragged batch answers each item with its own last-token top-k (equal to a full forward
 * of that item alone) and, on request, the whole logit row; one bad item in a batch fails alone; weights
 * load from a safetensors file in PyTorch's names, and a file that does not match the config is refused.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TandemError, isTandemError } from '../../../src/core/errors.js';
import { saveParameters } from '../../../src/nn/checkpoint.js';
import { Nn } from '../../../src/nn/context.js';
import { GptInference, topEntries } from '../../../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../../../src/nn/models/gpt.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { isGenerative } from '../../../src/service/serving/generation/generative.js';
import type { ServedModel } from '../../../src/service/serving/model.js';
import { type GptScoreOutput, gptModelFactory } from '../../../src/service/serving/models/gpt.js';
import { cpuRuntime } from '../../runtime/helpers.js';

let rt: Runtime;
let dir: string;
let served: ServedModel;
const spec = (config: Record<string, unknown>, weightsPath?: string) => ({
  name: 'micro',
  version: 1,
  kind: 'gpt',
  config,
  placement: { kinds: ['cpu' as const] },
  ...(weightsPath === undefined ? {} : { weightsPath }),
});
const ctx = () => ({ rt, device: 'cpu', tags: { model: 'micro' } });
const code = (c: string) => (e: unknown) => isTandemError(e) && e.code === c;

before(async () => {
  rt = await cpuRuntime();
  dir = mkdtempSync(join(tmpdir(), 'gpt-model-'));
  served = await gptModelFactory.create(spec({ preset: 'gpt-micro', precision: 'f32', seed: 4 }), rt);
});
after(async () => {
  await served.unload();
  await rt.close();
  rmSync(dir, { recursive: true, force: true });
});

void describe("model kind 'gpt'", () => {
  void it('parse: tokens or text; refuses bad items with stable codes', () => {
    assert.deepEqual(served.parse({ tokens: [1, 2, 3] }), {
      tokens: [1, 2, 3],
      topK: 5,
      returnLogits: false,
    });
    assert.deepEqual((served.parse({ text: 'hi', topK: 2 }) as { tokens: number[] }).tokens, [104, 105]);
    assert.throws(() => served.parse({ tokens: [256] }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.throws(() => served.parse({ tokens: [1.5] }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.throws(() => served.parse({ tokens: new Array<number>(33).fill(1) }), code('TANDEM_ERR_LIMIT'));
    assert.throws(() => served.parse({ tokens: [] }), code('TANDEM_ERR_LIMIT'));
    assert.throws(() => served.parse({ tokens: 'abc' }), code('TANDEM_ERR_SHAPE'));
    assert.throws(() => served.parse({ tokens: [1], extra: 1 }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.throws(() => served.parse({ tokens: [1], topK: 0 }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.throws(() => served.parse(null), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.equal(served.maxBatchSize, 64);
    assert.ok(served.weightBytes > 0);
    assert.ok(isGenerative(served));
  });

  void it('a ragged batch: each item gets its own top-k; returnLogits gives the row; a bad item fails alone', async () => {
    const items = [[5], [1, 2, 3, 4, 5, 6, 7], Array.from({ length: 32 }, (_, i) => i * 7)].map((t) =>
      served.parse({ tokens: t, topK: 3 }),
    );
    const withRow = served.parse({ tokens: [9, 8, 7], returnLogits: true });
    const outs = await served.runBatch(
      [...items, withRow, { tokens: [999], topK: 3, returnLogits: false }],
      ctx(),
    );
    const ref = new GptInference(new Gpt(new Nn(rt, { precision: 'f32', seed: 4 }), gptConfig('gpt-micro')));
    const want = await ref.lastLogits([
      [5],
      [1, 2, 3, 4, 5, 6, 7],
      Array.from({ length: 32 }, (_, i) => i * 7),
      [9, 8, 7],
    ]);
    for (let i = 0; i < 4; i++) {
      const o = outs[i] as GptScoreOutput;
      const k = i < 3 ? 3 : 5;
      const w = topEntries(want[i]!, k);
      assert.deepEqual(
        o.top.map((e) => e.token),
        w.map(([t]) => t),
      );
      o.top.forEach((e, j) => assert.ok(Math.abs(e.logit - w[j]![1]) < 1e-5));
    }
    const row = (outs[3] as GptScoreOutput).logits!;
    assert.equal(row.length, 256);
    assert.ok(Math.max(...row.map((v, j) => Math.abs(v - want[3]![j]!))) < 1e-5);
    assert.ok(outs[4] instanceof TandemError && outs[4].code === 'TANDEM_ERR_INVALID_ARGUMENT');
  });

  void it('weights from safetensors in PyTorch names; a mismatched file or config is refused', async () => {
    const src = new Gpt(new Nn(rt, { precision: 'f32', seed: 99 }), gptConfig('gpt-micro'));
    const path = join(dir, 'w.safetensors');
    await saveParameters(src, rt, path);
    const loaded = await gptModelFactory.create(
      spec({ preset: 'gpt-micro', precision: 'f32', seed: 1 }, path),
      rt,
    );
    const out = (await loaded.runBatch([loaded.parse({ tokens: [3, 4] })], ctx()))[0] as GptScoreOutput;
    const want = topEntries((await new GptInference(src).lastLogits([[3, 4]]))[0]!, 5);
    assert.deepEqual(
      out.top.map((e) => e.token),
      want.map(([t]) => t),
    );
    await loaded.unload();
    await assert.rejects(
      gptModelFactory.create(spec({ preset: 'gpt-micro', width: 64, precision: 'f32' }, path), rt),
      code('TANDEM_ERR_BAD_CHECKPOINT'),
    );
    await assert.rejects(
      gptModelFactory.create(spec({ preset: 'nope' }), rt),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    await assert.rejects(
      gptModelFactory.create(spec({ preset: 'gpt-micro', heads: 5 }), rt),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    await assert.rejects(
      gptModelFactory.create(spec({ preset: 'gpt-micro', bogus: 1 }), rt),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    await assert.rejects(
      gptModelFactory.create(spec({ preset: 'gpt-micro', tokenizer: 'gpt2' }), rt),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
  });

  void it('scoring plans: configured per model (exact shapes, no plans); bad knobs refused by name', async () => {
    const seqs = [
      [5, 6, 7],
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
    ];
    const outs: GptScoreOutput[][] = [];
    for (const scoring of [{}, { bucketed: false, planCopies: 1, planMiB: 8 }, { planRows: 0 }]) {
      const m = await gptModelFactory.create(
        spec({ preset: 'gpt-micro', precision: 'f32', seed: 4, scoring }),
        rt,
      );
      const items = seqs.map((tokens) => m.parse({ tokens, topK: 4 }));
      outs.push((await m.runBatch(items, ctx())) as GptScoreOutput[]);
      await m.unload();
    }
    // Bucketed (2 × 10), exact (2 × 9) and unplanned passes give each item the same top-4 tokens.
    for (const o of outs.slice(1))
      assert.deepEqual(
        o.map((r) => r.top.map((e) => e.token)),
        outs[0]!.map((r) => r.top.map((e) => e.token)),
      );
    for (const [scoring, field] of [
      [{ planRows: -1 }, 'scoring.planRows'],
      [{ planMiB: 0 }, 'scoring.planMiB'],
      [{ planCopies: 9 }, 'scoring.planCopies'],
      [{ bucketed: 'yes' }, 'scoring.bucketed'],
      [{ spare: 1 }, 'unknown scoring key "spare"'],
      ['all', 'scoring must be an object'],
    ] as const)
      await assert.rejects(
        gptModelFactory.create(spec({ preset: 'gpt-micro', scoring }), rt),
        (e: unknown) =>
          isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT' && e.message.includes(field),
      );
  });
});
