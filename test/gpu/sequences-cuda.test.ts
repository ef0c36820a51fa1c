/**
 * Runtime sequences on a GPU: the steps of a sequence go into the CUDA compute stream back to back
 * (program launches through the launch batcher, cuBLASLt calls between them), so a random program cut
 * into sequences must equal sequential execution; GPT scoring through kept plans (the same device
 * addresses every run) must give the per-kernel path's logits; and training in sequence mode must
 * follow the task-per-kernel run. A prepared sequence run again at the same addresses is replayed as a
 * CUDA graph from its third run (devices/cuda/sequence-graphs.ts): each run with new inputs must equal a
 * float64 reference, and the plans above must still equal the per-kernel path. Skipped without CUDA.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { Nn } from '../../src/nn/context.js';
import { GptInference } from '../../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../../src/nn/models/gpt.js';
import { Trainer, type TrainData, type TrainSpec } from '../../src/nn/train.js';
import type { SequenceStep } from '../../src/runtime/sequence.js';
import { randomValues } from '../runtime/helpers.js';
import { cudaRuntime, graphStats, maxRelDiff } from './cuda-runtime.js';

const { rt, hasCuda, reason } = await cudaRuntime('tandem-seq-');
after(() => rt.close());

void describe('sequences on cuda0', { skip: hasCuda ? false : reason }, () => {
  void it('a random program (gemm, axpy, scale) cut into sequences equals a float64 replay', async () => {
    const n = 48;
    const count = 20;
    const init = Array.from({ length: count }, (_, i) => randomValues(n * n, 100 + i).map((v) => v / n));
    const ts = init.map((a) => rt.tensor([n, n], 'f32', a));
    const want = init.map((a) => Float64Array.from(a, (v) => Math.fround(v)));
    const rnd = seededRandom(7);
    const pick = (): number => Math.floor(rnd() * count);
    const steps: SequenceStep[] = [];
    for (let k = 0; k < 300; k++) {
      const x = pick();
      let y = pick();
      if (y === x) y = (y + 1) % count;
      const r = rnd();
      if (r < 0.3) {
        let z = pick();
        while (z === x || z === y) z = (z + 1) % count;
        steps.push({ kernel: 'gemm', args: { a: ts[x]!, b: ts[y]!, c: ts[z]! } });
        const out = new Float64Array(n * n);
        for (let i = 0; i < n; i++)
          for (let j = 0; j < n; j++) {
            let s = 0;
            for (let p = 0; p < n; p++) s += want[x]![i * n + p]! * want[y]![p * n + j]!;
            out[i * n + j] = s;
          }
        want[z] = out;
      } else if (r < 0.65) {
        steps.push({ kernel: 'axpy', args: { x: ts[x]!, y: ts[y]! }, scalars: { alpha: 0.5 } });
        want[y] = want[y]!.map((v, i) => v + 0.5 * want[x]![i]!);
      } else {
        steps.push({ kernel: 'scale', args: { x: ts[x]! }, scalars: { alpha: 0.75 } });
        want[x] = want[x]!.map((v) => 0.75 * v);
      }
    }
    for (let i = 0; i < steps.length; i += 37)
      rt.submitSequence({ steps: steps.slice(i, i + 37), device: 'cuda0' });
    for (let i = 0; i < count; i++) {
      const got = await rt.read(ts[i]!);
      assert.ok(maxRelDiff(got, want[i]!) < 1e-4, `tensor ${i}: ${maxRelDiff(got, want[i]!)}`);
    }
  });

  void it('GPT scoring through kept plans equals the per-kernel path, shape after shape', async () => {
    const model = new Gpt(
      new Nn(rt, { precision: 'f32', device: 'cuda0', seed: 5 }),
      gptConfig('gpt-micro', { vocab: 97, paddedVocab: 128, context: 32 }),
    );
    const planned = new GptInference(model);
    const perKernel = new GptInference(model, undefined, { sequences: false });
    const rnd = seededRandom(11);
    const before = graphStats(rt);
    for (let round = 0; round < 5; round++)
      for (const lens of [[32], [5, 17, 9]]) {
        const seqs = lens.map((l) => Array.from({ length: l }, () => Math.floor(rnd() * 97)));
        const a = await planned.lastLogits(seqs, { device: 'cuda0' });
        const b = await perKernel.lastLogits(seqs, { device: 'cuda0' });
        for (const [i, row] of a.entries())
          assert.ok(
            maxRelDiff(row, b[i]!) < 1e-5,
            `round ${round}, sequence ${i}: ${maxRelDiff(row, b[i]!)}`,
          );
      }
    planned.dispose();
    const after = graphStats(rt);
    console.log(`# GPT plans: ${JSON.stringify({ before, after })}`);
    // Rounds 3-5 of each shape replay its recorded graph (unless the plan's kernels cannot be captured).
    assert.ok(
      after.replayed - before.replayed >= 6 || after.refused > before.refused,
      `no graph replays: ${JSON.stringify(after)}`,
    );
  });

  void it('a prepared sequence run with new inputs each time (replayed as a CUDA graph) equals float64', async () => {
    const n = 40;
    const a = rt.tensor([n, n], 'f32', randomValues(n * n, 1));
    const b = rt.tensor([n, n], 'f32', randomValues(n * n, 2));
    const c = rt.tensor([n, n], 'f32');
    const y = rt.tensor([n, n], 'f32', randomValues(n * n, 3));
    // c = a·b; c *= 0.5; y += 2·c; a *= 0.25 (a step that writes an input the next run overwrites)
    const prepared = rt.prepareSequence({
      device: 'cuda0',
      steps: [
        { kernel: 'gemm', args: { a, b, c } },
        { kernel: 'scale', args: { x: c }, scalars: { alpha: 0.5 } },
        { kernel: 'axpy', args: { x: c, y }, scalars: { alpha: 2 } },
        { kernel: 'scale', args: { x: a }, scalars: { alpha: 0.25 } },
      ],
    });
    const before = graphStats(rt);
    let yRef = Float64Array.from(randomValues(n * n, 3), (v) => Math.fround(v));
    for (let run = 0; run < 6; run++) {
      const av = Float64Array.from(randomValues(n * n, 10 + run), (v) => Math.fround(v));
      const bv = Float64Array.from(randomValues(n * n, 20 + run), (v) => Math.fround(v));
      await rt.write(a, Float32Array.from(av));
      await rt.write(b, Float32Array.from(bv));
      await rt.write(c, new Float32Array(n * n).fill(Number.NaN)); // poisoned: the gemm must write all of c
      await rt.submitPrepared(prepared).done;
      const next = new Float64Array(n * n);
      for (let i = 0; i < n; i++)
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (let p = 0; p < n; p++) s += av[i * n + p]! * bv[p * n + j]!;
          next[i * n + j] = yRef[i * n + j]! + 2 * 0.5 * s;
        }
      yRef = next;
      const gotY = await rt.read(y);
      assert.ok(maxRelDiff(gotY, yRef) < 1e-4, `run ${run}: y ${maxRelDiff(gotY, yRef)}`);
      const gotA = await rt.read(a);
      assert.ok(
        maxRelDiff(
          gotA,
          av.map((v) => v * 0.25),
        ) < 1e-6,
        `run ${run}: a`,
      );
    }
    const after = graphStats(rt);
    console.log(`# prepared gemm/scale/axpy: ${JSON.stringify({ before, after })}`);
    assert.equal(after.captured - before.captured, 1, JSON.stringify(after));
    assert.equal(after.replayed - before.replayed, 5, JSON.stringify(after));
    for (const t of [a, b, c, y]) rt.free(t);
  });

  void it('training gpt-micro in sequence mode follows the task-per-kernel run', async () => {
    const data: TrainData = {
      kind: 'tokens',
      train: Int32Array.from(randomValues(8192, 3), (v) => Math.floor(((v + 1) / 2) * 255.999)),
    };
    const spec: TrainSpec = {
      model: 'gpt',
      preset: 'gpt-micro',
      steps: 6,
      batch: 4,
      seqLen: 32,
      precision: 'f32',
      lr: 1e-2,
      maxNorm: 1,
      seed: 4,
      device: 'cuda0',
    };
    const run = async (sequences: boolean): Promise<number[]> => {
      const t = new Trainer(rt, { ...spec, sequences }, data);
      const losses: number[] = [];
      try {
        await t.run((r) => losses.push(r.loss));
      } finally {
        t.dispose();
      }
      return losses;
    };
    const off = await run(false);
    const on = await run(true);
    assert.ok(maxRelDiff(on, off) < 1e-5, `losses ${on.join(', ')} vs ${off.join(', ')}`);
  });
});
