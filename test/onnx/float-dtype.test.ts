/**
 * f16/bf16 runs of the planned executor on a real CPU runtime: float inputs go up as f32 and are cast on
 * the run's device, float outputs are widened there and read as f32, values stay within the dtype's
 * rounding of the float64 graph, and a second run with other inputs overwrites the kept I/O tensors.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { encodeModel, floatTensor } from './build-model.js';

// x [N, 2, 6, 6] → Conv 3x3 (2 → 3 channels, pad 1) + bias → Relu → Add x2 [N, 3, 6, 6] → y.
const model = parseOnnxModel(
  encodeModel({
    nodes: [
      {
        op: 'Conv',
        inputs: ['x', 'W', 'B'],
        outputs: ['c'],
        attrs: [{ name: 'pads', ints: [1, 1, 1, 1], type: 7 }],
      },
      { op: 'Relu', inputs: ['c'], outputs: ['r'] },
      { op: 'Add', inputs: ['r', 'x2'], outputs: ['y'] },
    ],
    inputs: [
      { name: 'x', dims: ['N', 2, 6, 6] },
      { name: 'x2', dims: ['N', 3, 6, 6] },
    ],
    outputs: [{ name: 'y', dims: ['N', 3, 6, 6] }],
    initializers: [
      floatTensor(
        'W',
        [3, 2, 3, 3],
        Array.from({ length: 54 }, (_, i) => Math.sin(i * 1.7) * 0.4),
      ),
      floatTensor('B', [3], [0.25, -0.5, 0.125]),
    ],
  }),
);

/** Inputs of `n` images, random and never zero. */
function feeds(n: number, seed: number) {
  const rnd = seededRandom(seed);
  const make = (c: number) => {
    const dims = [n, c, 6, 6];
    const data = new Float32Array(n * c * 36).map(() => (rnd() < 0.5 ? -1 : 1) * (0.05 + rnd()));
    return { dims, data };
  };
  return { x: make(2), x2: make(3) };
}

describe('onnx executor: f16 and bf16 runs', () => {
  let rt: Runtime;
  const ops: Array<{ name: string; device: string }> = [];
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
    rt.addObserver({
      onTaskStart: (e) => void ops.push({ name: e.name, device: e.deviceId }),
      onTaskEnd: () => undefined,
    });
  });
  after(async () => {
    await rt.close();
  });

  for (const floatDType of ['f16', 'bf16'] as const) {
    it(`${floatDType}: inputs cast and outputs widened on the device, values within the dtype's rounding`, async () => {
      const exec = new OnnxExecutor(model, rt);
      // Unit roundoff of the dtype; the conv sums 18 products, each input and weight rounded once.
      const u = floatDType === 'f16' ? 2 ** -11 : 2 ** -8;
      try {
        for (const [n, seed] of [
          [2, 5],
          [2, 6],
          [3, 7],
        ] as const) {
          ops.length = 0;
          const f = feeds(n, seed);
          const out = (await exec.run(f, { device: 'cpu', floatDType }))['y']!;
          assert.ok(out.data instanceof Float32Array, 'an f16/bf16 output is read as f32');
          assert.deepEqual(out.dims, [n, 3, 6, 6]);
          const ref = evaluateReference(model, f)['y']!;
          let worst = 0;
          for (let i = 0; i < ref.data.length; i++) {
            const want = ref.data[i]!;
            const err = Math.abs(out.data[i]! - want);
            // Each term rounded a few times in the run's dtype, plus the output's own rounding.
            const bound = 24 * u * (1 + Math.abs(want));
            worst = Math.max(worst, err / bound);
            assert.ok(err <= bound, `element ${i}: ${out.data[i]} vs ${want} (bound ${bound})`);
          }
          assert.ok(worst > 0, 'a 16-bit run agrees with float64 to the last bit: nothing was narrowed');
          const casts = ops.filter((o) => o.name.startsWith('cast:')).map((o) => `${o.name}@${o.device}`);
          assert.deepEqual(casts.sort(), ['cast:input:x2@cpu0', 'cast:input:x@cpu0', 'cast:output:y@cpu0']);
        }
      } finally {
        exec.close();
      }
    });
  }

  it('f32 runs take no casts, and f32 and f16 runs of one executor keep their own answers', async () => {
    const exec = new OnnxExecutor(model, rt);
    try {
      const f = feeds(2, 9);
      ops.length = 0;
      const a = (await exec.run(f, { device: 'cpu' }))['y']!;
      assert.equal(ops.filter((o) => o.name.startsWith('cast:')).length, 0);
      const h = (await exec.run(f, { device: 'cpu', floatDType: 'f16' }))['y']!;
      const b = (await exec.run(f, { device: 'cpu' }))['y']!;
      assert.deepEqual(Array.from(b.data), Array.from(a.data));
      const ref = evaluateReference(model, f)['y']!;
      let f32Err = 0;
      let f16Err = 0;
      for (let i = 0; i < ref.data.length; i++) {
        f32Err = Math.max(f32Err, Math.abs(a.data[i]! - ref.data[i]!));
        f16Err = Math.max(f16Err, Math.abs(h.data[i]! - ref.data[i]!));
      }
      assert.ok(f32Err < 1e-5 && f16Err > f32Err, `f32 ${f32Err}, f16 ${f16Err}`);
    } finally {
      exec.close();
    }
  });
});
