/**
 * The continuous-batching engine on the CPU with a random gpt-micro: concurrent requests get exactly
 * the tokens each would get alone (greedy, checked against full forwards), short requests admitted
 * later finish before long ones, an aborted live request frees its slot at the next step, seeded
 * sampling does not depend on the batch, and every limit fails with its stable code.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../../src/core/errors.js';
import { seededRandom } from '../../../src/core/seeded-random.js';
import { Nn } from '../../../src/nn/context.js';
import { GptInference, argmax } from '../../../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../../../src/nn/models/gpt.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { GenerationEngine } from '../../../src/service/serving/generation/engine.js';
import { cpuRuntime } from '../../runtime/helpers.js';

let rt: Runtime;
let inf: GptInference;
const config = gptConfig('gpt-micro');

before(async () => {
  rt = await cpuRuntime();
  inf = new GptInference(new Gpt(new Nn(rt, { precision: 'f32', seed: 21 }), config));
});
after(async () => {
  await rt.close();
});

const code = (c: string) => (e: unknown) => isTandemError(e) && e.code === c;

/** Greedy tokens by repeated full forwards (no cache, no batching). */
async function alone(prompt: readonly number[], n: number): Promise<number[]> {
  const seq = [...prompt];
  for (let i = 0; i < n; i++) seq.push(argmax((await inf.lastLogits([seq]))[0]!));
  return seq.slice(prompt.length);
}

function prompts(count: number, seed: number): number[][] {
  const rnd = seededRandom(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => Math.floor(rnd() * config.vocab)),
  );
}

void describe('generation engine (continuous batching, CPU)', () => {
  void it('concurrent greedy requests get the tokens each gets alone; streaming sees every token', async () => {
    const engine = new GenerationEngine(inf, { maxSequences: 3, maxLength: 32 });
    const ps = prompts(8, 1);
    const budgets = ps.map((_, i) => 2 + ((i * 5) % 9));
    const streamed: number[][] = ps.map(() => []);
    const results = await Promise.all(
      ps.map((prompt, i) =>
        engine.generate({ prompt, maxTokens: budgets[i]!, onToken: (t) => void streamed[i]!.push(t) }),
      ),
    );
    for (const [i, r] of results.entries()) {
      assert.deepEqual(r.tokens, await alone(ps[i]!, budgets[i]!), `request ${i}`);
      assert.deepEqual(streamed[i], r.tokens);
      assert.equal(r.finishReason, 'length');
      assert.ok(r.firstTokenMs >= r.queueMs && r.totalMs >= r.firstTokenMs);
    }
    const st = engine.stats();
    assert.equal(st.live + st.waiting, 0);
    assert.equal(st.freeSlots, 3);
    // Iteration-level batching: far fewer steps than tokens.
    assert.ok(st.steps < st.generatedTokens / 2, `${st.steps} steps for ${st.generatedTokens} tokens`);
    await engine.close();
  });

  void it('a short request admitted into a freed slot finishes before a long one started earlier', async () => {
    const engine = new GenerationEngine(inf, { maxSequences: 2, maxLength: 32 });
    const order: string[] = [];
    const long = engine.generate({ prompt: [1, 2], maxTokens: 25 }).then(() => order.push('long'));
    const mid = engine.generate({ prompt: [3], maxTokens: 3 }).then(() => order.push('mid'));
    const short = engine.generate({ prompt: [4], maxTokens: 2 }).then(() => order.push('short'));
    await Promise.all([long, mid, short]);
    assert.deepEqual(order, ['mid', 'short', 'long']);
    await engine.close();
  });

  void it('an aborted live request frees its slot at the next step; a waiting one leaves at once', async () => {
    const engine = new GenerationEngine(inf, { maxSequences: 1, maxLength: 32 });
    const ac = new AbortController();
    let seen = 0;
    const victim = engine.generate({
      prompt: [5, 6],
      maxTokens: 28,
      signal: ac.signal,
      onToken: () => {
        if (++seen === 3) ac.abort();
      },
    });
    const queued = new AbortController();
    const waiting = engine.generate({ prompt: [7], maxTokens: 4, signal: queued.signal });
    queued.abort();
    await assert.rejects(waiting, code('TANDEM_ERR_CANCELLED'));
    const after = engine.generate({ prompt: [8], maxTokens: 4 });
    await assert.rejects(victim, code('TANDEM_ERR_CANCELLED'));
    assert.equal(seen, 3, 'no token after the abort');
    assert.equal((await after).tokens.length, 4);
    assert.equal(engine.stats().freeSlots, 1);
    await engine.close();
  });

  void it('seeded sampling gives the same tokens alone and in a crowd; stop tokens and callbacks end with stop', async () => {
    const engine = new GenerationEngine(inf, { maxSequences: 4, maxLength: 32 });
    const req = { prompt: [9, 9, 9], maxTokens: 12, sampling: { temperature: 1.3, topK: 20, seed: 77 } };
    const solo = await engine.generate(req);
    const crowd = await Promise.all([
      engine.generate(req),
      ...prompts(3, 5).map((p) =>
        engine.generate({ prompt: p, maxTokens: 9, sampling: { temperature: 0.9 } }),
      ),
    ]);
    assert.deepEqual(crowd[0]!.tokens, solo.tokens);
    const first = solo.tokens[0]!;
    const stopped = await engine.generate({ ...req, stopTokens: [first] });
    assert.deepEqual(stopped.tokens, []);
    assert.equal(stopped.finishReason, 'stop');
    const cut = await engine.generate({ ...req, onToken: (_t, i) => i === 4 });
    assert.deepEqual(cut.tokens, solo.tokens.slice(0, 5));
    assert.equal(cut.finishReason, 'stop');
    await engine.close();
  });

  void it('limits: context, queue, bad tokens, bad options, closed', async () => {
    const engine = new GenerationEngine(inf, { maxSequences: 1, maxLength: 16, maxWaiting: 1 });
    await assert.rejects(engine.generate({ prompt: [1, 2, 3], maxTokens: 14 }), code('TANDEM_ERR_LIMIT'));
    await assert.rejects(engine.generate({ prompt: [], maxTokens: 1 }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    await assert.rejects(
      engine.generate({ prompt: [256], maxTokens: 1 }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    await assert.rejects(engine.generate({ prompt: [1], maxTokens: 0 }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    await assert.rejects(
      engine.generate({ prompt: [1], maxTokens: 2, sampling: { topP: 2 } }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    const a = engine.generate({ prompt: [1], maxTokens: 10 }); // live
    const b = engine.generate({ prompt: [2], maxTokens: 10 }); // waiting (the one place)
    await assert.rejects(engine.generate({ prompt: [3], maxTokens: 10 }), code('TANDEM_ERR_OVERLOADED'));
    await Promise.all([a, b]);
    const bytes = engine.stats().cacheBytes;
    assert.equal(bytes, 2 * 2 * 1 * 16 * 32 * 4);
    assert.throws(
      () => new GenerationEngine(inf, { maxSequences: 8, maxLength: 16, maxCacheBytes: bytes - 1 }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    const capped = new GenerationEngine(inf, { maxSequences: 8, maxLength: 16, maxCacheBytes: 3 * bytes });
    assert.equal(capped.stats().slots, 3);
    await capped.close();
    await engine.close();
    await assert.rejects(engine.generate({ prompt: [1], maxTokens: 1 }), code('TANDEM_ERR_CLOSED'));
  });
});
