/**
 * `POST /v1/completions` through the official `openai` client against a real Fastify service on
 * loopback (Tandem's HTTP base: auth, limits, error handling) serving a random gpt-micro on the CPU:
 * the non-streaming answer has OpenAI's shape and the engine's greedy tokens; streaming chunks add up to
 * the same text; stop strings cut the answer; an abort mid-stream frees the slot; bad inputs, unknown
 * models, a missing key and a full queue get OpenAI error objects with Tandem's codes and statuses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import type { Runtime } from '../../../src/runtime/runtime.js';
import type { Tenant } from '../../../src/service/auth/tenants.js';
import { createHttpApp } from '../../../src/service/http/http-app.js';
import { completionsRoutes } from '../../../src/service/http/routes/completions.js';
import type { GenerativeModel } from '../../../src/service/serving/generation/generative.js';
import type { ServedModel } from '../../../src/service/serving/model.js';
import { gptModelFactory } from '../../../src/service/serving/models/gpt.js';
import { cpuRuntime } from '../../runtime/helpers.js';

const KEY = 'test-key-completions';
const TENANT: Tenant = {
  id: 't1',
  name: 'tenant one',
  role: 'user',
  weight: 1,
  maxConcurrentJobs: 10,
  maxDeviceMemoryBytes: 2 ** 30,
  maxQueuedJobs: 100,
  maxTimeoutSeconds: 600,
  createdAt: 0,
};

let rt: Runtime;
let app: FastifyInstance;
let client: OpenAI;
let base: string;
const models = new Map<string, ServedModel>();

async function register(name: string, config: Record<string, unknown>): Promise<GenerativeModel> {
  const m = await gptModelFactory.create(
    { name, version: 1, kind: 'gpt', config, placement: { kinds: ['cpu'] } },
    rt,
  );
  models.set(name, m);
  return m as GenerativeModel;
}

before(async () => {
  rt = await cpuRuntime();
  await register('micro', {
    preset: 'gpt-micro',
    precision: 'f32',
    seed: 3,
    generation: { maxSequences: 2 },
  });
  await register('micro-long', { preset: 'gpt-micro', context: 512, precision: 'f32', seed: 3 });
  // A long context, so the queue test's first completion is still running when its third request
  // arrives (30 tokens of a 32-position model could finish first on a loaded CI machine).
  await register('tiny-queue', {
    preset: 'gpt-micro',
    context: 512,
    precision: 'f32',
    seed: 3,
    generation: { maxSequences: 1, maxWaiting: 1 },
  });
  app = await createHttpApp({
    logLevel: 'silent',
    bodyLimitBytes: 1 << 20,
    requestTimeoutMs: 30_000,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 5_000,
    rateLimitPerSec: 1000,
    rateLimitBurst: 1000,
    authenticate: (k) => (k === KEY ? TENANT : null),
    onError: () => undefined,
    openapi: { title: 'test', description: 'completions' },
  });
  await app.register(completionsRoutes({ lookup: (n) => models.get(n) }));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  base = `${address}/v1`;
  client = new OpenAI({ apiKey: KEY, baseURL: base, maxRetries: 0, timeout: 30_000 });
});

after(async () => {
  await app.close();
  for (const m of models.values()) await m.unload();
  await rt.close();
});

function engineOf(name: string) {
  return (models.get(name) as GenerativeModel).generator.engine();
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const decode = (tokens: number[]) => new TextDecoder().decode(Uint8Array.from(tokens));

void describe('/v1/completions with the openai client', () => {
  void it('non-streaming: OpenAI shape, the greedy tokens as text, usage', async () => {
    const r = await client.completions.create({
      model: 'micro',
      prompt: 'Hello',
      max_tokens: 12,
      temperature: 0,
    });
    assert.match(r.id, /^cmpl-/);
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, 'micro');
    assert.ok(Number.isInteger(r.created));
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0]!.index, 0);
    assert.equal(r.choices[0]!.logprobs, null);
    assert.equal(r.choices[0]!.finish_reason, 'length');
    assert.deepEqual(r.usage, { prompt_tokens: 5, completion_tokens: 12, total_tokens: 17 });
    const direct = await engineOf('micro').generate({ prompt: [72, 101, 108, 108, 111], maxTokens: 12 });
    assert.equal(r.choices[0]!.text, decode(direct.tokens));
    // A prompt of token ids is the same prompt.
    const ids = await client.completions.create({
      model: 'micro',
      prompt: [72, 101, 108, 108, 111],
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(ids.choices[0]!.text, r.choices[0]!.text);
  });

  void it('streaming: chunks add up to the same text; the last carries the finish reason and usage', async () => {
    const whole = await client.completions.create({
      model: 'micro',
      prompt: 'abc',
      max_tokens: 20,
      temperature: 0,
    });
    const stream = await client.completions.create({
      model: 'micro',
      prompt: 'abc',
      max_tokens: 20,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const reasons: (string | null)[] = [];
    let usage: OpenAI.Completions.CompletionUsage | undefined;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'text_completion');
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.text;
        reasons.push(c.finish_reason);
      }
    }
    assert.equal(text, whole.choices[0]!.text);
    assert.ok(reasons.length >= 2);
    assert.equal(reasons.at(-1), 'length');
    assert.ok(reasons.slice(0, -1).every((x) => x === null));
    assert.equal(usage?.completion_tokens, 20);
  });

  void it('stop strings cut the answer (streamed or not) with finish_reason stop', async () => {
    const whole = (
      await client.completions.create({ model: 'micro', prompt: 'xyz', max_tokens: 24, temperature: 0 })
    ).choices[0]!.text;
    // A stop string from the middle of the greedy answer, made of whole characters.
    const at = Array.from({ length: whole.length }, (_, i) => i).find(
      (i) => i >= 2 && !whole.slice(i, i + 2).includes('\uFFFD') && whole.slice(i, i + 2).length === 2,
    );
    assert.ok(at !== undefined, JSON.stringify(whole));
    const stop = whole.slice(at, at + 2);
    const want = whole.slice(0, whole.indexOf(stop));
    const r = await client.completions.create({
      model: 'micro',
      prompt: 'xyz',
      max_tokens: 24,
      temperature: 0,
      stop,
    });
    assert.equal(r.choices[0]!.text, want);
    assert.equal(r.choices[0]!.finish_reason, 'stop');
    let streamed = '';
    let reason: string | null = null;
    for await (const c of await client.completions.create({
      model: 'micro',
      prompt: 'xyz',
      max_tokens: 24,
      temperature: 0,
      stop: [stop],
      stream: true,
    }))
      for (const ch of c.choices) {
        streamed += ch.text;
        reason = ch.finish_reason ?? reason;
      }
    assert.equal(streamed, want);
    assert.equal(reason, 'stop');
  });

  void it('seeded sampling repeats; an abort mid-stream frees the slot', async () => {
    const req = { model: 'micro', prompt: 'seed', max_tokens: 10, temperature: 1, top_p: 0.9, seed: 12 };
    const a = await client.completions.create(req);
    const b = await client.completions.create(req);
    assert.equal(a.choices[0]!.text, b.choices[0]!.text);
    const engine = engineOf('micro-long');
    const stream = await client.completions.create({
      model: 'micro-long',
      prompt: 'long',
      max_tokens: 500,
      temperature: 0,
      stream: true,
    });
    let chunks = 0;
    for await (const c of stream) {
      void c;
      if (++chunks === 2) break; // leaving the loop aborts the request
    }
    await until(() => engine.stats().live === 0);
    assert.equal(engine.stats().freeSlots, engine.stats().slots);
    // Dropped at a step boundary, long before its 500 tokens.
    assert.ok(engine.stats().generatedTokens < 250, `${engine.stats().generatedTokens} tokens made`);
  });

  void it('bad inputs and limits: OpenAI error objects with Tandem codes', async () => {
    const fails = async (body: Record<string, unknown>, status: number, code: string) => {
      const e = await client.completions
        .create(body as unknown as OpenAI.Completions.CompletionCreateParamsNonStreaming)
        .then(
          () => null,
          (x: unknown) => x,
        );
      assert.ok(e instanceof OpenAI.APIError, `expected an error for ${JSON.stringify(body)}`);
      assert.equal(e.status, status, JSON.stringify(body));
      assert.equal(e.code, code);
      return e;
    };
    const nf = await fails({ model: 'nope', prompt: 'a' }, 404, 'TANDEM_ERR_NOT_FOUND');
    assert.equal((nf.error as { type?: string }).type, 'invalid_request_error');
    await fails({ model: 'micro', prompt: 'a', max_tokens: 40 }, 400, 'TANDEM_ERR_LIMIT');
    await fails({ model: 'micro', prompt: 'a'.repeat(33) }, 400, 'TANDEM_ERR_LIMIT');
    await fails({ model: 'micro', prompt: [1, 256] }, 400, 'TANDEM_ERR_INVALID_ARGUMENT');
    await fails({ model: 'micro', prompt: 'a', n: 2 }, 400, 'TANDEM_ERR_INVALID_ARGUMENT');
    await fails({ model: 'micro', prompt: 'a', temperature: -1 }, 400, 'TANDEM_ERR_INVALID_ARGUMENT');
    await fails({ model: 'micro', prompt: ['a', 'b'] }, 400, 'TANDEM_ERR_INVALID_ARGUMENT');
    await fails(
      { model: 'micro', prompt: 'a', stop: ['a', 'b', 'c', 'd', 'e'] },
      400,
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
    const noKey = new OpenAI({ apiKey: 'wrong', baseURL: base, maxRetries: 0 });
    await assert.rejects(
      noKey.completions.create({ model: 'micro', prompt: 'a' }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError,
    );
    // Queue full: one live, one waiting, the third is refused with 429 and Retry-After.
    const long = { model: 'tiny-queue', prompt: 'q', max_tokens: 400, temperature: 0 };
    const first = client.completions.create(long);
    const second = client.completions.create(long);
    await until(
      () => engineOf('tiny-queue').stats().live === 1 && engineOf('tiny-queue').stats().waiting === 1,
    );
    const e = await fails(long, 429, 'TANDEM_ERR_OVERLOADED');
    assert.equal(e.headers?.get('retry-after'), '1');
    await Promise.all([first, second]);
  });
});
