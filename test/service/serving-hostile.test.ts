/**
 * Hostile inputs through the interactive lane on the real CPU runtime, the cases a sweep found
 * answered wrongly (a 200 with nulls, a 500, a wrong code, or seconds of the event loop): float32
 * overflow and NaN/Inf in tensor inputs, fractions for an integer input, outputs JSON cannot carry (one
 * request of a batch of two), a model file whose node its op cannot read, string graph inputs, GPT
 * configs too large for any device, texts far past the context, OpenAI stream options that make no
 * sense, a weights file's server path in its error, and an option price that overflows. Each is a
 * stable code and status, and the lane serves good requests (checked against a reference) after them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { encodeModel, int64Tensor, servedMlpModel } from '../onnx/build-model.js';
import { cpuTestService, type TestService } from './helpers.js';
import { errorCode, infer, registerModel, uploadModelFile, type InjectAnswer } from './serving-helpers.js';

async function registerOnnx(
  s: TestService,
  name: string,
  bytes: Uint8Array,
  extra: Record<string, unknown> = {},
): Promise<InjectAnswer> {
  return registerModel(s, {
    name,
    kind: 'onnx',
    upload: await uploadModelFile(s, bytes),
    placement: { kinds: ['cpu'] },
    ...extra,
  });
}

function fails(res: InjectAnswer, status: number, code: string, text?: RegExp): void {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(errorCode(res), code, res.body);
  if (text) assert.match(res.body, text);
}

/** Random values in [-2, 2) from `seed` (xorshift), never all zeros. */
function randomValues(n: number, seed: number): number[] {
  let x = (seed * 2654435761) >>> 0 || 1;
  return Array.from({ length: n }, () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return (x % 40_000) / 10_000 - 2;
  });
}

const f32Base64 = (values: number[]): string =>
  Buffer.from(Float32Array.from(values).buffer).toString('base64');

void test(
  'lane: hostile tensor values, outputs JSON cannot carry, malformed model files',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    t.after(() => s.close());
    const mlp = servedMlpModel();
    assert.equal((await registerOnnx(s, 'mlp', mlp)).statusCode, 201);
    const good = async (seed: number): Promise<void> => {
      const x = randomValues(5 * 4, seed);
      const res = await infer(s, 'mlp', { inputs: { x: { shape: [5, 4], data: x } } });
      assert.equal(res.statusCode, 200, res.body);
      const want = evaluateReference(parseOnnxModel(mlp), { x: { dims: [1, 5, 4], data: x } }).y!;
      const got = (res.json() as { outputs: { y: { data: number[] } } }).outputs.y.data;
      got.forEach((v, i) => assert.ok(Math.abs(v - want.data[i]!) < 1e-6, `y[${i}] ${v} vs ${want.data[i]}`));
    };
    await good(1);

    // A JSON number past float32's range was Infinity in the model's input (a 200 of nulls).
    const x = randomValues(4, 2);
    fails(
      await infer(s, 'mlp', { inputs: { x: { shape: [1, 4], data: [1e300, ...x.slice(1)] } } }),
      400,
      'TANDEM_ERR_DTYPE',
      /data\[0\] \(1e\+300\) does not fit in float32/,
    );
    // NaN and ±Inf in base64 or binary float data go to the model, as ONNX Runtime takes them: a JSON
    // answer cannot carry the non-finite outputs (422 for that request), a binary answer carries them.
    fails(
      await infer(s, 'mlp', {
        inputs: { x: { shape: [1, 4], data: f32Base64([x[0]!, NaN, x[2]!, x[3]!]) } },
      }),
      422,
      'TANDEM_ERR_UNSTABLE',
      /output 'y' is not finite/,
    );
    const json = Buffer.from(
      JSON.stringify({ inputs: { x: { shape: [1, 4], binaryDataSize: 16 } }, binaryOutputs: true }),
    );
    const bin = await s.svc.app.inject({
      method: 'POST',
      url: '/v1/models/mlp/infer',
      headers: {
        ...s.auth(),
        'content-type': 'application/octet-stream',
        'inference-header-content-length': String(json.length),
      },
      payload: Buffer.concat([json, Buffer.from(Float32Array.from([x[0]!, x[1]!, NaN, x[3]!]).buffer)]),
    });
    assert.equal(bin.statusCode, 200, bin.body);
    const out = bin.rawPayload.subarray(Number(bin.headers['inference-header-content-length']));
    const values = Array.from({ length: out.length / 4 }, (_, i) => out.readFloatLE(4 * i));
    assert.ok(
      values.length > 0 && values.some(Number.isNaN),
      'the NaN input gave NaN outputs, carried as they are',
    );
    await good(3);

    // An integer (int64) input: a fraction or an integer past 2^53 is refused, not rounded or narrowed.
    const castModel = encodeModel({
      nodes: [{ op: 'Cast', inputs: ['i'], outputs: ['y'], attrs: [{ name: 'to', i: 1, type: 2 }] }],
      inputs: [{ name: 'i', type: 7, dims: ['N', 3] }],
      outputs: [{ name: 'y', dims: ['N', 3] }],
    });
    assert.equal((await registerOnnx(s, 'cast', castModel)).statusCode, 201);
    fails(
      await infer(s, 'cast', { inputs: { i: { shape: [3], data: [4, 1.5, 2] } } }),
      400,
      'TANDEM_ERR_DTYPE',
    );
    fails(
      await infer(s, 'cast', { inputs: { i: { shape: [3], data: [2 ** 60, 1, 2] } } }),
      400,
      'TANDEM_ERR_DTYPE',
    );
    const ints = await infer(s, 'cast', { inputs: { i: { shape: [3], data: [7, -3, 12] } } });
    assert.equal(ints.statusCode, 200, ints.body);
    assert.deepEqual((ints.json() as { outputs: { y: { data: number[] } } }).outputs.y.data, [7, -3, 12]);

    // exp(100) overflows float32: as JSON numbers it was null in a 200; now 422 for that request alone,
    // while the other request of the same batch is answered.
    const expModel = encodeModel({
      nodes: [{ op: 'Exp', inputs: ['x'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: ['N', 4] }],
      outputs: [{ name: 'y', dims: ['N', 4] }],
    });
    const batched = { batching: { maxBatchSize: 2, maxQueueDelayUs: 2_000_000 } };
    assert.equal((await registerOnnx(s, 'exp', expModel, batched)).statusCode, 201);
    const xs = randomValues(4, 4);
    const [over, ok] = await Promise.all([
      infer(s, 'exp', { inputs: { x: { shape: [4], data: [xs[0]!, 100, xs[2]!, xs[3]!] } } }),
      infer(s, 'exp', { inputs: { x: { shape: [4], data: xs } } }),
    ]);
    fails(over!, 422, 'TANDEM_ERR_UNSTABLE', /output 'y' is not finite \(data\[1\] = Infinity\)/);
    assert.equal(over!.headers['x-tandem-batch-size'], '2');
    assert.equal(ok!.statusCode, 200, ok!.body);
    assert.equal(ok!.headers['x-tandem-batch-size'], '2');
    (ok!.json() as { outputs: { y: { data: number[] } } }).outputs.y.data.forEach((v, i) =>
      assert.ok(Math.abs(v - Math.exp(xs[i]!)) <= 1e-6 * Math.exp(xs[i]!), `exp(${xs[i]}) = ${v}`),
    );
    // A binary answer carries the infinity as it is.
    const asBinary = await s.svc.app.inject({
      method: 'POST',
      url: '/v1/models/exp/infer',
      headers: s.auth(),
      payload: { inputs: { x: { shape: [4], data: [xs[0]!, 100, xs[2]!, xs[3]!] } }, binaryOutputs: true },
    });
    assert.equal(asBinary.statusCode, 200, asBinary.body);
    const bytes = asBinary.rawPayload.subarray(Number(asBinary.headers['inference-header-content-length']));
    assert.equal(bytes.readFloatLE(4), Infinity);
    const metrics = await s.svc.app.inject({ url: '/metrics', headers: s.auth() });
    assert.ok(
      metrics.body.includes(
        'tandem_model_failures_total{model="exp",version="1",code="TANDEM_ERR_UNSTABLE"} 1',
      ),
      'the failure is counted once, under its code',
    );

    // A node with no inputs: registered (shapes bind per request), then a 422 naming the node, not a 500.
    const relu0 = encodeModel({
      nodes: [{ op: 'Relu', inputs: [], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: ['N', 4] }],
      outputs: [{ name: 'y', dims: ['N', 4] }],
    });
    assert.equal((await registerOnnx(s, 'relu0', relu0)).statusCode, 201);
    fails(
      await infer(s, 'relu0', { inputs: { x: { shape: [4], data: randomValues(4, 5) } } }),
      422,
      'TANDEM_ERR_BAD_DATA',
      /Relu node 'n0' \(0 inputs\) is malformed/,
    );
    // A string input was accepted and fed numbers; now refused at registration, nothing kept.
    const strings = encodeModel({
      nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'] }],
      inputs: [{ name: 'x', type: 8, dims: ['N', 4] }],
      outputs: [{ name: 'y', dims: ['N', 4] }],
    });
    fails(await registerOnnx(s, 'strings', strings), 422, 'TANDEM_ERR_UNSUPPORTED', /element type string/);
    fails(
      await infer(s, 'strings', { inputs: { x: { shape: [4], data: [1, 2, 3, 4] } } }),
      404,
      'TANDEM_ERR_NOT_FOUND',
    );
    await good(6);
  },
);

void test(
  'lane: GPT configs too large for any device; OpenAI stream options',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    t.after(() => s.close());
    // The dims are open-ended integers: context 1e9 was a 422 BAD_CHECKPOINT "RangeError" after trying to
    // allocate it; width 1e6 would have tried 10^13 parameters.
    for (const config of [
      { preset: 'gpt-micro', context: 1_000_000_000_000 },
      { preset: 'gpt-micro', width: 1_000_000 },
    ]) {
      fails(
        await registerModel(s, { name: 'huge', kind: 'gpt', config }),
        507,
        'TANDEM_ERR_OUT_OF_MEMORY',
        /the weights need .* TiB in bf16, the largest (cpu )?device here has/,
      );
    }
    // A KV cache that cannot be allocated (4096 sequences of 65536 positions: 4 TiB in bf16) failed every
    // completion with a 500 DEPENDENCY_FAILED; a cache too small for one sequence, every one with a 400.
    fails(
      await registerModel(s, {
        name: 'huge',
        kind: 'gpt',
        config: {
          preset: 'gpt-micro',
          context: 65_536,
          width: 2048,
          heads: 16,
          generation: { maxSequences: 4096 },
        },
      }),
      507,
      'TANDEM_ERR_OUT_OF_MEMORY',
      /the KV cache of 4096 sequences of 65536 positions \(4\.0 TiB\) need more than/,
    );
    fails(
      await registerModel(s, {
        name: 'huge',
        kind: 'gpt',
        config: { preset: 'gpt-micro', generation: { maxCacheMiB: 0.001 } },
      }),
      400,
      'TANDEM_ERR_INVALID_ARGUMENT',
      /generation\.maxCacheMiB holds no sequence of 32 positions/,
    );
    const reg = await registerModel(s, {
      name: 'micro',
      kind: 'gpt',
      config: { preset: 'gpt-micro', precision: 'f32', seed: 3 },
    });
    assert.equal(reg.statusCode, 201, reg.body);
    const complete = async (body: Record<string, unknown>): Promise<InjectAnswer> =>
      (await s.svc.app.inject({
        method: 'POST',
        url: '/v1/completions',
        headers: s.auth(),
        payload: body,
      })) as InjectAnswer;
    const base = { model: 'micro', prompt: [5, 17, 200], max_tokens: 3, temperature: 0 };
    for (const [extra, text] of [
      [{ stream_options: { include_usage: true } }, /only allowed with stream: true/],
      [{ stream: true, stream_options: 'usage' }, /must be an object/],
      [{ stream: true, stream_options: { include_usage: 'yes' } }, /include_usage must be a boolean/],
    ] as const) {
      const res = await complete({ ...base, ...extra });
      fails(res, 400, 'TANDEM_ERR_INVALID_ARGUMENT', text);
      assert.equal((res.json() as { error: { param: string } }).error.param, 'stream_options');
    }
    // A 16 MB text for a 32-position model was encoded whole (seconds of the event loop for 90 MB) before
    // its length was checked: now its UTF-8 length bounds its tokens from below first.
    const text = 'the quick brown fox jumps over the lazy dog. '.repeat((16 * 2 ** 20) / 45);
    const scored = await infer(s, 'micro', { inputs: { text } });
    fails(
      scored,
      400,
      'TANDEM_ERR_LIMIT',
      /the text is at least \d+ tokens; 1 to 32 \(the context\) allowed/,
    );
    fails(
      await complete({ ...base, prompt: text.slice(0, 2 ** 14) }),
      400,
      'TANDEM_ERR_LIMIT',
      /at least 16384 tokens/,
    );
    const short = await infer(s, 'micro', { inputs: { text: 'abc', topK: 3 } });
    assert.equal(short.statusCode, 200, short.body);
    // An unknown 100 kB model name: 404, its name not echoed back whole.
    const long = await complete({ ...base, model: 'm'.repeat(100_000) });
    fails(long, 404, 'TANDEM_ERR_NOT_FOUND', /\(100000 characters\)/);
    assert.ok(long.body.length < 500, `${long.body.length} bytes answered`);
    // Good requests still answer: greedy, so the same tokens twice.
    const a = await complete(base);
    const b = await complete({ ...base, stream: true, stream_options: { include_usage: true } });
    assert.equal(a.statusCode, 200, a.body);
    assert.equal(b.statusCode, 200, b.body);
    assert.equal((a.json() as { usage: { completion_tokens: number } }).usage.completion_tokens, 3);
    assert.match(b.body, /"usage":\{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6\}/);
  },
);

void test('lane: a bad weights file is named by its model and version, not by its path on the server', async (t) => {
  const s = await cpuTestService(t);
  if (!s) return;
  t.after(() => s.close());
  // A safetensors header whose length field is 2^63: the reader's message named the file under the data
  // directory (also in details.file), which the client saw.
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(2n ** 63n);
  const junk = Buffer.concat([len, Buffer.from('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}')]);
  const res = await registerModel(s, {
    name: 'junk',
    kind: 'mlp',
    config: { sizes: [784, 16, 10] },
    upload: await uploadModelFile(s, junk),
  });
  fails(
    res,
    422,
    'TANDEM_ERR_BAD_CHECKPOINT',
    /safetensors: the weights of junk v1: header length 9223372036854775808/,
  );
  assert.ok(!res.body.includes(s.dir), res.body);
  assert.equal(
    (res.json() as { error: { details: { reason: string } } }).error.details.reason,
    'header-too-large',
  );
  const ok = await registerModel(s, { name: 'fine', kind: 'mlp', config: { sizes: [784, 16, 10] } });
  assert.equal(ok.statusCode, 201, ok.body);
});

void test('lane: the option pricer registers with the default placement; an overflowing price fails alone', async (t) => {
  const s = await cpuTestService(t);
  if (!s) return;
  t.after(() => s.close());
  // The default placement (cuda, webgpu, cpu) was refused: "option-pricer runs on cpu or cuda, not webgpu".
  const reg = await registerModel(s, {
    name: 'pricer',
    kind: 'option-pricer',
    batching: { maxBatchSize: 2, maxQueueDelayUs: 2_000_000 },
  });
  assert.equal(reg.statusCode, 201, reg.body);
  assert.deepEqual((reg.json() as { placement: { kinds: string[] } }).placement.kinds, ['cuda', 'cpu']);
  // A spot of 1e300 was a 200 with price and stdError null; the other option of its batch is priced.
  const terms = { right: 'call', strike: 100, rate: 0.05, vol: 0.2, maturity: 1, paths: 200_000, seed: 7 };
  const [over, ok] = await Promise.all([
    infer(s, 'pricer', { inputs: { ...terms, spot: 1e300 } }),
    infer(s, 'pricer', { inputs: { ...terms, spot: 100 } }),
  ]);
  fails(over!, 422, 'TANDEM_ERR_UNSTABLE', /the price is not finite/);
  assert.equal(over!.headers['x-tandem-batch-size'], '2');
  assert.equal(ok!.statusCode, 200, ok!.body);
  assert.equal(ok!.headers['x-tandem-batch-size'], '2');
  const { price, stdError } = (ok!.json() as { outputs: { price: number; stdError: number } }).outputs;
  // Black–Scholes call, S = K = 100, r = 0.05, σ = 0.2, T = 1: 10.4506.
  assert.ok(Math.abs(price - 10.4506) < 5 * stdError, `price ${price} ± ${stdError}`);
  // A placement whose kinds this server lacks is refused, not served on its CPU (no silent fallback).
  const gpuOnly = await registerModel(s, {
    name: 'pricer-gpu',
    kind: 'option-pricer',
    placement: { kinds: ['cuda'] },
  });
  fails(gpuOnly, 400, 'TANDEM_ERR_DEVICE_ABSENT', /placement allows cuda; this server has cpu/);
  const listed = await s.svc.app.inject({ url: '/v1/models', headers: s.auth() });
  assert.ok(!listed.body.includes('pricer-gpu'), 'the refused model is not registered');
  assert.equal((await infer(s, 'pricer', { inputs: { ...terms, spot: 100 } })).statusCode, 200);
});

void test('lane: a graph that expands a request past the device or past a JSON answer', async (t) => {
  const s = await cpuTestService(t);
  if (!s) return;
  t.after(() => s.close());
  // y = x expanded to [1, a, b]: the request is one number, the answer a·b.
  const expand = (a: number, b: number): Uint8Array =>
    encodeModel({
      nodes: [{ op: 'Expand', inputs: ['x', 's'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: ['N', 1, 1] }],
      outputs: [{ name: 'y', dims: ['N', 'a', 'b'] }],
      initializers: [int64Tensor('s', [3], [1, a, b])],
    });
  // 10^10 floats: was a 500 DEPENDENCY_FAILED (of the output's read); the node's own error is the answer.
  assert.equal((await registerOnnx(s, 'vast', expand(100_000, 100_000))).statusCode, 201);
  fails(
    await infer(s, 'vast', { inputs: { x: { shape: [1, 1], data: [0.5] } } }),
    507,
    'TANDEM_ERR_OUT_OF_MEMORY',
    /onnx: Expand:n0 failed: cannot allocate/,
  );
  // 2^24 + 2^16 numbers: past what one JSON answer holds (V8's string limit); binary carries them.
  const [a, b] = [4100, 4108];
  assert.equal((await registerOnnx(s, 'wide', expand(a, b))).statusCode, 201);
  fails(
    await infer(s, 'wide', { inputs: { x: { shape: [1, 1], data: [0.75] } } }),
    400,
    'TANDEM_ERR_LIMIT',
    /output 'y' has 16842800 values, more than a JSON answer holds .*binaryOutputs/,
  );
  const bin = await s.svc.app.inject({
    method: 'POST',
    url: '/v1/models/wide/infer',
    headers: s.auth(),
    payload: { inputs: { x: { shape: [1, 1], data: [0.75] } }, binaryOutputs: true },
  });
  assert.equal(bin.statusCode, 200, bin.body.slice(0, 300));
  const bytes = bin.rawPayload.subarray(Number(bin.headers['inference-header-content-length']));
  assert.equal(bytes.length, a * b * 4);
  for (const i of [0, 12345, a * b - 1]) assert.equal(bytes.readFloatLE(i * 4), 0.75);
});
