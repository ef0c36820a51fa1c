/**
 * Forward-only GPT with a KV cache on the CPU, f32, random weights: every logit row the cached path
 * produces (prefill of several prompts, then decode steps of ragged sequences, new prompts admitted
 * mid-way into freed slots) equals the training module's full causal forward over the sequence so far;
 * the scoring path (ragged sequences padded right) equals it too; bad tokens and overlong runs fail
 * with stable codes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { Nn } from '../../src/nn/context.js';
import { GptInference, KvCache, argmax, topEntries } from '../../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../../src/nn/models/gpt.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { cpuRuntime } from '../runtime/helpers.js';

let rt: Runtime;
let model: Gpt;
let inf: GptInference;
const config = gptConfig('gpt-micro', { vocab: 97, paddedVocab: 104, context: 24 });

before(async () => {
  rt = await cpuRuntime();
  model = new Gpt(new Nn(rt, { precision: 'f32', seed: 7 }), config);
  inf = new GptInference(model);
});
after(async () => {
  await rt.close();
});

/** The training module's logits after the last token of `tokens` (the full causal forward). */
async function fullLast(tokens: readonly number[]): Promise<Float32Array> {
  const nn = model.nn;
  const out = nn.noGrad(() => model.logits(nn.input(tokens, [1, tokens.length], 'i32')));
  const all = (await rt.read(out.data)) as Float32Array;
  nn.release();
  const row = (tokens.length - 1) * config.paddedVocab;
  return all.slice(row, row + config.vocab);
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

const TOL = 2e-5;

function randomTokens(n: number, rnd: () => number): number[] {
  return Array.from({ length: n }, () => Math.floor(rnd() * config.vocab));
}

/** Equal to f32 rounding: within 1e-5 relative (plus 1e-5 absolute near zero), element for element. */
function assertNear(got: ArrayLike<number>, want: ArrayLike<number>, what: string): void {
  assert.equal(got.length, want.length, what);
  for (let v = 0; v < want.length; v++)
    assert.ok(
      Math.abs(got[v]! - want[v]!) <= 1e-5 * (1 + Math.abs(want[v]!)),
      `${what}, element ${v}: ${got[v]} vs ${want[v]}`,
    );
}

void describe('GPT inference with a KV cache (f32, CPU)', () => {
  void it('every cached step gives the full forward logits; new sequences join freed slots', async () => {
    const rnd = seededRandom(3);
    const cache = new KvCache(rt, config, 'f32', { slots: 3, positions: 20 });
    type Live = { slot: number; tokens: number[]; done: number; budget: number };
    const queue = [5, 1, 9, 3, 7].map((n, i) => ({ prompt: randomTokens(n, rnd), budget: 3 + 2 * i }));
    const live: Live[] = [];
    let checked = 0;
    let worst = 0;
    while (queue.length > 0 || live.length > 0) {
      const runs: { slot: number; start: number; tokens: number[] }[] = [];
      for (const l of live)
        runs.push({ slot: l.slot, start: l.tokens.length - 1, tokens: [l.tokens.at(-1)!] });
      // Admission at every step, into whatever slot a finished sequence left.
      while (queue.length > 0 && cache.freeSlots > 0) {
        const q = queue.shift()!;
        const l: Live = { slot: cache.acquire()!, tokens: [...q.prompt], done: 0, budget: q.budget };
        live.push(l);
        runs.push({ slot: l.slot, start: 0, tokens: [...q.prompt] });
      }
      const logits = await inf.step(cache, runs);
      for (const [i, r] of runs.entries()) {
        const l = live.find((x) => x.slot === r.slot)!;
        const want = await fullLast(l.tokens);
        worst = Math.max(worst, maxDiff(logits[i]!, want));
        checked++;
        l.tokens.push(argmax(logits[i]!));
        l.done++;
      }
      for (const l of [...live])
        if (l.done >= l.budget) {
          cache.release(l.slot);
          live.splice(live.indexOf(l), 1);
        }
    }
    assert.ok(checked > 20, `checked ${checked} rows`);
    assert.ok(worst < TOL, `max |cached − full| = ${worst}`);
    cache.dispose();
  });

  void it('scoring: ragged sequences padded right give each sequence its own last-token logits', async () => {
    const rnd = seededRandom(11);
    const seqs = [1, 24, 7, 13].map((n) => randomTokens(n, rnd));
    const got = await inf.lastLogits(seqs);
    for (const [i, s] of seqs.entries()) assert.ok(maxDiff(got[i]!, await fullLast(s)) < TOL);
    // The device's top-k agrees with the host's on the same logits.
    const top = await inf.last(seqs, { kind: 'topk', k: 5 });
    for (const [i, t] of top.entries()) {
      const want = topEntries(got[i]!, 5);
      assert.deepEqual(
        [...t.indices],
        want.map(([j]) => j),
      );
      assert.deepEqual(
        [...t.values],
        want.map(([, v]) => v),
      );
    }
  });

  void it('a forward pass is one runtime task, with the logits of a task per kernel', async () => {
    const perKernel = new GptInference(model, undefined, { sequences: false });
    const rnd = seededRandom(19);
    const seqs = [5, 17, 9].map((n) => randomTokens(n, rnd));
    let tasks = 0;
    const counter = { onTaskEnd: (): void => void tasks++ };
    rt.addObserver(counter);
    const together = await inf.lastLogits(seqs);
    const sequenceTasks = tasks;
    tasks = 0;
    const separate = await perKernel.lastLogits(seqs);
    const kernelTasks = tasks;
    rt.removeObserver(counter);
    // One sequence and the read of the logits (and two input writes when a kept plan runs again),
    // against every kernel as its own task.
    assert.ok(sequenceTasks <= 4, `tasks with sequences: ${sequenceTasks}`);
    assert.ok(kernelTasks > 5 * config.layers + 2, `tasks without: ${kernelTasks}`);
    // The kept plan pads the batch to its bucket (17 tokens run as 20), so its GEMMs have other row counts
    // than the per-kernel pass's: BLAS may block them differently (OpenBLAS on AMD EPYC does), so the
    // logits agree to f32 rounding rather than bit for bit.
    for (const [i, row] of together.entries()) assertNear(row, separate[i]!, `sequence ${i}`);
  });

  void it('kept plans: repeated shapes with new tokens and lengths give the per-kernel results, no leak', async () => {
    const perKernel = new GptInference(model, undefined, { sequences: false });
    const planned = new GptInference(model);
    const rnd = seededRandom(23);
    const live = (): number => [...rt.liveTensors()].length;
    const before = live();
    let afterFirstRound = 0;
    for (let round = 0; round < 3; round++) {
      // The same padded shapes each round (lengths 12 and 20), other tokens and other last rows.
      for (const lens of [
        [12, 3 + round],
        [20, 20 - round, 1 + round],
      ]) {
        const seqs = lens.map((n) => randomTokens(n, rnd));
        const want = await perKernel.lastLogits(seqs);
        const got = await planned.lastLogits(seqs);
        for (const [i, row] of got.entries()) assert.deepEqual([...row], [...want[i]!], `round ${round}`);
        const top = await planned.last(seqs, { kind: 'topk', k: 3 });
        for (const [i, t] of top.entries())
          assert.deepEqual(
            [...t.indices],
            topEntries(want[i]!, 3).map(([j]) => j),
            `round ${round} top-k`,
          );
      }
      if (round === 0) afterFirstRound = live();
    }
    // Plans are made in the first round and reused after it: nothing more is kept.
    assert.equal(live(), afterFirstRound, 'no tensors kept beyond the plans');
    assert.ok(afterFirstRound > before, 'the plans hold their tensors');
    planned.dispose();
    await rt.idle();
    assert.equal(live(), before, 'dispose frees every plan tensor');
  });

  void it('bucketed plans: padded rows and positions change no real row; one plan serves a bucket', async () => {
    const perKernel = new GptInference(model, undefined, { sequences: false });
    const exact = new GptInference(model, undefined, { plans: { bucketed: false } });
    const bucketed = new GptInference(model);
    const rnd = seededRandom(29);
    // Batches of 9 and 10 (bucket 10) padded to 11 and 12 tokens (bucket 12).
    for (const [b, t] of [
      [9, 11],
      [10, 12],
      [10, 11],
    ] as const) {
      const seqs = Array.from({ length: b }, (_, i) => randomTokens(i === 0 ? t : 1 + (i % t), rnd));
      const want = await perKernel.lastLogits(seqs);
      for (const inf2 of [exact, bucketed]) {
        const got = await inf2.lastLogits(seqs);
        assert.equal(got.length, b, 'padding rows are not returned');
        for (const [i, row] of got.entries()) assertNear(row, want[i]!, `b ${b} row ${i}`);
      }
    }
    assert.equal(bucketed.keptPlans.count, 1, 'shapes 9×11, 10×12 and 10×11 share the 10×12 plan');
    assert.equal(exact.keptPlans.count, 3, 'exact shapes: a plan each');
    // Two passes of one shape at once: the second runs on a copy of the plan, both right.
    const seqsA = Array.from({ length: 10 }, () => randomTokens(12, rnd));
    const seqsB = Array.from({ length: 10 }, () => randomTokens(12, rnd));
    const [a, bOut] = await Promise.all([bucketed.lastLogits(seqsA), bucketed.lastLogits(seqsB)]);
    const [wantA, wantB] = [await perKernel.lastLogits(seqsA), await perKernel.lastLogits(seqsB)];
    assert.equal(bucketed.keptPlans.count, 2, 'a second copy while the first ran');
    for (const [got, want] of [
      [a, wantA],
      [bOut, wantB],
    ] as const)
      for (const [i, row] of got.entries()) assertNear(row, want[i]!, `concurrent row ${i}`);
    exact.dispose();
    bucketed.dispose();
    await rt.idle();
  });

  void it('decode plans: bucketed steps give the per-kernel logits; one plan a bucket; released with the cache', async () => {
    const perKernel = new GptInference(model, undefined, { sequences: false });
    const planned = new GptInference(model);
    // Plans only up to 8 rows: the steps of 10 and 9 rows (bucket 10) are built anew, 8 and 7 planned.
    const capped = new GptInference(model, undefined, { plans: { maxRows: 8 } });
    const rnd = seededRandom(31);
    const live = (): number => [...rt.liveTensors()].length;
    const before = live();
    const all = [perKernel, planned, capped];
    const caches = all.map(() => new KvCache(rt, config, 'f32', { slots: 12, positions: 20 }));
    // 11 prompts in slots 0…10, then four decode steps, one sequence leaving before each and the rows in a
    // new order each time: 10, 9, 8 and 7 rows, run at bucketUp's 10, 10, 8 and 7.
    let seqs = Array.from({ length: 11 }, (_, i) => ({ slot: i, tokens: randomTokens(2 + (i % 5), rnd) }));
    for (const [i, inf2] of all.entries())
      await inf2.step(
        caches[i]!,
        seqs.map((q) => ({ slot: q.slot, start: 0, tokens: q.tokens })),
      );
    for (let step = 0; step < 4; step++) {
      // The highest slot leaves (slot 0, where a padding row would land if it were not slot −1, stays).
      const top = Math.max(...seqs.map((q) => q.slot));
      seqs = seqs.filter((q) => q.slot !== top).reverse();
      const next = seqs.map(() => Math.floor(rnd() * config.vocab));
      const runs = seqs.map((q, i) => ({ slot: q.slot, start: q.tokens.length, tokens: [next[i]!] }));
      const want = await perKernel.step(caches[0]!, runs);
      for (const [j, inf2] of [planned, capped].entries()) {
        const got = await inf2.step(caches[j + 1]!, runs);
        assert.equal(got.length, runs.length, 'padding rows are not returned');
        for (const [i, row] of got.entries()) assertNear(row, want[i]!, `step ${step} row ${i}`);
      }
      seqs.forEach((q, i) => q.tokens.push(next[i]!));
    }
    assert.equal(planned.keptDecodePlans.count, 3, 'steps of 10 and 9 rows share the bucket-10 plan');
    assert.equal(planned.keptPlans.count, 0, 'no scoring plan');
    assert.equal(capped.keptDecodePlans.count, 2, 'over maxRows no plan: only 8 and 7 rows');
    planned.releaseCache(caches[1]!);
    capped.dispose();
    assert.equal(planned.keptDecodePlans.count, 0, 'released with the cache');
    for (const c of caches) c.dispose();
    await rt.idle();
    assert.equal(live(), before, 'every plan and cache tensor freed');
  });

  void it('greedy decoding on the device (top-1) picks the argmax of the cached logits', async () => {
    const cache = new KvCache(rt, config, 'f32', { slots: 2, positions: 12 });
    const runs = [
      { slot: 0, start: 0, tokens: [3, 1, 4, 1, 5] },
      { slot: 1, start: 0, tokens: [9, 2] },
    ];
    const full = await inf.step(cache, runs);
    const top = await inf.stepHead(cache, runs, { kind: 'topk', k: 1 });
    assert.deepEqual(
      top.map((t) => t.indices[0]),
      full.map((l) => argmax(l)),
    );
    cache.dispose();
  });

  void it('rejects bad tokens, overlong sequences and clashing slots with stable codes', async () => {
    const cache = new KvCache(rt, config, 'f32', { slots: 2, positions: 8 });
    const code = (c: string) => (e: unknown) => isTandemError(e) && e.code === c;
    await assert.rejects(inf.lastLogits([[1, 97]]), code('TANDEM_ERR_INVALID_ARGUMENT'));
    await assert.rejects(inf.lastLogits([[1, -1]]), code('TANDEM_ERR_INVALID_ARGUMENT'));
    await assert.rejects(inf.lastLogits([new Array<number>(25).fill(1)]), code('TANDEM_ERR_LIMIT'));
    await assert.rejects(
      inf.step(cache, [{ slot: 0, start: 5, tokens: [1, 2, 3, 4] }]),
      code('TANDEM_ERR_LIMIT'),
    );
    await assert.rejects(
      inf.step(cache, [
        { slot: 1, start: 0, tokens: [1] },
        { slot: 1, start: 1, tokens: [2] },
      ]),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    await assert.rejects(
      inf.step(cache, [{ slot: 2, start: 0, tokens: [1] }]),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    assert.throws(
      () => new KvCache(rt, config, 'f32', { slots: 1, positions: 25 }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    cache.dispose();
  });
});

void describe('GPT inference in bf16 (CPU)', () => {
  void it('cached decode follows the bf16 full forward within bf16 rounding', async () => {
    const m16 = new Gpt(new Nn(rt, { precision: 'bf16', seed: 7 }), config);
    const inf16 = new GptInference(m16);
    const cache = new KvCache(rt, config, 'bf16', { slots: 1, positions: 12 });
    const tokens = [4, 8, 15, 16, 23, 42];
    let got = (await inf16.step(cache, [{ slot: 0, start: 0, tokens: tokens.slice(0, 3) }]))[0]!;
    for (let n = 3; n <= tokens.length; n++) {
      const want = (await inf16.lastLogits([tokens.slice(0, n)]))[0]!;
      const scale = Math.max(...Array.from(want, Math.abs));
      // Different kernels round their bf16 intermediates at different points: a few bf16 ulps of the scale.
      assert.ok(maxDiff(got, want) <= 4 * 2 ** -8 * scale, `n=${n}: ${maxDiff(got, want)} vs scale ${scale}`);
      if (n < tokens.length)
        got = (await inf16.step(cache, [{ slot: 0, start: n, tokens: [tokens[n]!] }]))[0]!;
    }
    cache.dispose();
  });
});
