/**
 * Binary tensors through the interactive lane (src/service/http/binary-tensors.ts), on the real CPU
 * runtime with an uploaded .onnx model: a binary request and a binary answer carry the same values as
 * the JSON ones and as the float64 graph; a JSON request can ask for a binary answer; every malformed
 * binary body is a 400 with a stable code, and the model keeps serving after them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { servedMlpModel } from '../onnx/build-model.js';
import { MAX_INFER_BODY_BYTES } from '../../src/service/http/routes/models.js';
import { cpuTestService, type TestService } from './helpers.js';
import { errorCode, infer, mustRegister, uploadModelFile, type InjectAnswer } from './serving-helpers.js';

const mlp = servedMlpModel();

/** A binary body: the JSON header, then each buffer in order. */
function binaryBody(header: unknown, ...tensors: Buffer[]): { length: number; body: Buffer } {
  return paddedBinaryBody(header, 1, ...tensors);
}

/** The same with the JSON padded to a multiple of `align` bytes (4: the server reads tensors in place). */
function paddedBinaryBody(
  header: unknown,
  align: number,
  ...tensors: Buffer[]
): { length: number; body: Buffer } {
  const text = JSON.stringify(header);
  const json = Buffer.from(text.padEnd(Math.ceil(text.length / align) * align, ' '));
  return { length: json.length, body: Buffer.concat([json, ...tensors]) };
}

async function post(
  s: TestService,
  payload: Buffer,
  headers: Record<string, string>,
  model = 'mlp',
): Promise<InjectAnswer & { rawPayload: Buffer }> {
  return (await s.svc.app.inject({
    method: 'POST',
    url: `/v1/models/${model}/infer`,
    headers: { ...s.auth(), 'content-type': 'application/octet-stream', ...headers },
    payload,
  })) as unknown as InjectAnswer & { rawPayload: Buffer };
}

/** Splits a binary answer into its JSON header and the float32 values of its one tensor output. */
function readBinaryAnswer(res: InjectAnswer & { rawPayload: Buffer }): {
  header: { outputs: { y: { shape: number[]; binaryDataSize: number } } };
  values: number[];
} {
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-type']), /application\/octet-stream/);
  const n = Number(res.headers['inference-header-content-length']);
  const header = JSON.parse(res.rawPayload.subarray(0, n).toString()) as {
    outputs: { y: { shape: number[]; binaryDataSize: number } };
  };
  const bytes = res.rawPayload.subarray(n);
  assert.equal(bytes.length, header.outputs.y.binaryDataSize);
  return { header, values: Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4)) };
}

void test(
  'lane: binary tensor requests and answers; malformed binary bodies',
  { timeout: 60_000 },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    t.after(() => s.close());
    await mustRegister(s, {
      name: 'mlp',
      kind: 'onnx',
      upload: await uploadModelFile(s, mlp),
      placement: { kinds: ['cpu'] },
    });
    const x = Float32Array.from({ length: 5 * 4 }, (_, i) => Math.sin(i * 1.3 + 0.2) * 2);
    const ref = evaluateReference(parseOnnxModel(mlp), { x: { dims: [1, 5, 4], data: Array.from(x) } }).y!;
    const xBytes = Buffer.from(x.buffer);

    // Binary in, binary out.
    const bin = binaryBody(
      { inputs: { x: { shape: [5, 4], binaryDataSize: xBytes.length } }, binaryOutputs: true },
      xBytes,
    );
    const a = readBinaryAnswer(
      await post(s, bin.body, { 'inference-header-content-length': String(bin.length) }),
    );
    assert.deepEqual(a.header.outputs.y.shape, [5, 3]);
    assert.equal(a.values.length, 15);
    a.values.forEach((v, i) =>
      assert.ok(Math.abs(v - ref.data[i]!) < 1e-6, `y[${i}] ${v} vs ${ref.data[i]}`),
    );

    // JSON in, binary out: the same values; JSON in and out: the same values as numbers.
    const jsonBody = { inputs: { x: { shape: [5, 4], data: Array.from(x) } } };
    const b = readBinaryAnswer(
      (await s.svc.app.inject({
        method: 'POST',
        url: '/v1/models/mlp/infer',
        headers: s.auth(),
        payload: { ...jsonBody, binaryOutputs: true },
      })) as unknown as InjectAnswer & { rawPayload: Buffer },
    );
    assert.deepEqual(b.values, a.values);
    const j = await infer(s, 'mlp', jsonBody);
    assert.equal(j.statusCode, 200, j.body);
    assert.deepEqual((j.json() as { outputs: { y: { data: number[] } } }).outputs.y.data, a.values);

    // Binary in, JSON out.
    const c = binaryBody({ inputs: { x: { shape: [5, 4], binaryDataSize: xBytes.length } } }, xBytes);
    const cj = await post(s, c.body, { 'inference-header-content-length': String(c.length) });
    assert.equal(cj.statusCode, 200, cj.body);
    assert.deepEqual((cj.json() as { outputs: { y: { data: number[] } } }).outputs.y.data, a.values);

    // Malformed binary bodies: each a 400 with its code and a message that says what is wrong.
    const bad = async (payload: Buffer, headers: Record<string, string>, code: string, text: RegExp) => {
      const res = await post(s, payload, headers);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(errorCode(res), code);
      assert.match(res.body, text);
    };
    await bad(
      bin.body,
      {},
      'TANDEM_ERR_MALFORMED_REQUEST',
      /inference-header-content-length header is missing/,
    );
    await bad(
      bin.body,
      { 'inference-header-content-length': String(bin.body.length + 1) },
      'TANDEM_ERR_MALFORMED_REQUEST',
      /JSON header's byte length/,
    );
    await bad(
      bin.body,
      { 'inference-header-content-length': 'ten' },
      'TANDEM_ERR_MALFORMED_REQUEST',
      /JSON header's byte length/,
    );
    await bad(
      bin.body,
      { 'inference-header-content-length': String(bin.length - 1) },
      'TANDEM_ERR_MALFORMED_REQUEST',
      /not valid JSON/,
    );
    const extra = binaryBody(
      { inputs: { x: { shape: [5, 4], binaryDataSize: xBytes.length } } },
      xBytes,
      Buffer.alloc(8, 1),
    );
    await bad(
      extra.body,
      { 'inference-header-content-length': String(extra.length) },
      'TANDEM_ERR_MALFORMED_REQUEST',
      /8 bytes after the last binary input/,
    );
    const short = binaryBody({ inputs: { x: { shape: [5, 4], binaryDataSize: xBytes.length + 4 } } }, xBytes);
    await bad(
      short.body,
      { 'inference-header-content-length': String(short.length) },
      'TANDEM_ERR_MALFORMED_REQUEST',
      /needs 84 bytes/,
    );
    const both = binaryBody(
      { inputs: { x: { shape: [5, 4], data: [1], binaryDataSize: xBytes.length } } },
      xBytes,
    );
    await bad(
      both.body,
      { 'inference-header-content-length': String(both.length) },
      'TANDEM_ERR_MALFORMED_REQUEST',
      /both data and binaryDataSize/,
    );
    // Prototype poisoning in the JSON header is refused as Fastify refuses it in a JSON body.
    for (const poison of ['"__proto__":{"admin":true}', '"constructor":{"prototype":{"admin":true}}']) {
      const text = `{"inputs":{"x":{"shape":[5,4],"binaryDataSize":${xBytes.length}}},${poison}}`;
      await bad(
        Buffer.concat([Buffer.from(text), xBytes]),
        { 'inference-header-content-length': String(Buffer.byteLength(text)) },
        'TANDEM_ERR_MALFORMED_REQUEST',
        /forbidden prototype property/,
      );
    }
    // Sizes that add up but do not fit the shape: the model's own shape check.
    const wrong = binaryBody({ inputs: { x: { shape: [4, 4], binaryDataSize: xBytes.length } } }, xBytes);
    await bad(
      wrong.body,
      { 'inference-header-content-length': String(wrong.length) },
      'TANDEM_ERR_SHAPE',
      /binary data has 80 bytes, the shape needs 64/,
    );

    // Over the infer body limit: refused from its Content-Length, before reading it.
    const huge = await post(s, Buffer.alloc(MAX_INFER_BODY_BYTES + 4), {
      'inference-header-content-length': '8',
    });
    assert.equal(huge.statusCode, 413, huge.body);
    assert.equal(errorCode(huge), 'TANDEM_ERR_PAYLOAD_TOO_LARGE');

    // Body buffers are reused once a request is answered: rounds of concurrent requests, each with its
    // own values, each answered with its own reference (an aliased buffer would mix them up). The
    // batcher holds each round's 8 requests queued together (a long delay, batches of 8).
    await mustRegister(s, {
      name: 'mlp8',
      kind: 'onnx',
      upload: await uploadModelFile(s, mlp),
      placement: { kinds: ['cpu'] },
      batching: { maxBatchSize: 8, maxQueueDelayUs: 2_000_000 },
    });
    for (let round = 0; round < 3; round++) {
      const xs = Array.from({ length: 8 }, (_, k) =>
        Float32Array.from({ length: 5 * 4 }, (_, i) => Math.cos(i * 0.7 + k * 1.9 + round * 0.3) * 3),
      );
      // Sent one after another, each once the previous body has been read and parsed, all queued for
      // one batch: a body released too early would be read into again by the next request.
      const sent: Array<ReturnType<typeof post>> = [];
      for (const xk of xs) {
        const bk = Buffer.from(xk.buffer);
        // Aligned, so the items are views of the body buffers themselves.
        const req = paddedBinaryBody(
          { inputs: { x: { shape: [5, 4], binaryDataSize: bk.length } }, binaryOutputs: true },
          4,
          bk,
        );
        sent.push(post(s, req.body, { 'inference-header-content-length': String(req.length) }, 'mlp8'));
        await new Promise((r) => setTimeout(r, 15));
      }
      const answers = await Promise.all(sent);
      answers.forEach((res, k) => {
        assert.equal(res.headers['x-tandem-batch-size'], '8');
        const want = evaluateReference(parseOnnxModel(mlp), {
          x: { dims: [1, 5, 4], data: Array.from(xs[k]!) },
        }).y!;
        readBinaryAnswer(res).values.forEach((v, i) =>
          assert.ok(Math.abs(v - want.data[i]!) < 1e-6, `round ${round} request ${k} y[${i}]`),
        );
      });
    }

    // The model still answers, equal to before.
    const again = readBinaryAnswer(
      await post(s, bin.body, { 'inference-header-content-length': String(bin.length) }),
    );
    assert.deepEqual(again.values, a.values);
  },
);
