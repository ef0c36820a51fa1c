/**
 * f16/bf16 runs of a model with control flow (the node-by-node interpreter, control/run.ts): float
 * inputs go up as f32 and are narrowed on the run's device, float outputs are widened there and read as
 * f32 (as the planned executor does, test/onnx/float-dtype.test.ts), values stay within the dtype's
 * rounding of float64, and no run leaves a tensor behind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { encodeModel, int64Tensor, subgraph } from './build-model.js';

const BOOL = 9;
const INT64 = 7;

// Loop M=3 times: s ← s + x·x (x from the outer graph), each iteration's s also scanned out.
const model = parseOnnxModel(
  encodeModel({
    nodes: [
      {
        op: 'Loop',
        inputs: ['three', 'yes', 's0'],
        outputs: ['s', 'trace'],
        attrs: [
          {
            name: 'body',
            type: 5,
            g: subgraph({
              nodes: [
                { op: 'Mul', inputs: ['x', 'x'], outputs: ['xx'] },
                { op: 'Add', inputs: ['s_in', 'xx'], outputs: ['s_out'] },
                { op: 'Identity', inputs: ['cond_in'], outputs: ['cond_out'] },
                { op: 'Identity', inputs: ['s_out'], outputs: ['scan'] },
              ],
              inputs: [
                { name: 'i', type: INT64, dims: [] },
                { name: 'cond_in', type: BOOL, dims: [] },
                { name: 's_in', dims: [4] },
              ],
              outputs: [
                { name: 'cond_out', type: BOOL, dims: [] },
                { name: 's_out', dims: [4] },
                { name: 'scan', dims: [4] },
              ],
            }),
          },
        ],
      },
    ],
    inputs: [
      { name: 's0', dims: [4] },
      { name: 'x', dims: [4] },
    ],
    outputs: [
      { name: 's', dims: [4] },
      { name: 'trace', dims: ['T', 4] },
    ],
    initializers: [int64Tensor('three', [], [3]), { name: 'yes', dims: [], dataType: BOOL, int32Data: [1] }],
  }),
);

describe('onnx control flow: f16 and bf16 runs', () => {
  let rt: Runtime;
  const ops: string[] = [];
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
    rt.addObserver({
      onTaskStart: (e) => void ops.push(`${e.name}@${e.deviceId}`),
      onTaskEnd: () => undefined,
    });
  });
  after(async () => {
    await rt.close();
  });

  for (const floatDType of ['f16', 'bf16'] as const) {
    it(`${floatDType}: inputs narrowed and outputs widened on the device, within the dtype's rounding`, async () => {
      const u = floatDType === 'f16' ? 2 ** -11 : 2 ** -8;
      const rnd = seededRandom(floatDType === 'f16' ? 3 : 4);
      const s0 = Array.from({ length: 4 }, () => (rnd() < 0.5 ? -1 : 1) * (0.1 + rnd()));
      const x = Array.from({ length: 4 }, () => (rnd() < 0.5 ? -1 : 1) * (0.1 + rnd()));
      const exec = new OnnxExecutor(model, rt);
      const live = [...rt.liveTensors()].length;
      try {
        ops.length = 0;
        const out = await exec.run(
          { s0: { dims: [4], data: s0 }, x: { dims: [4], data: x } },
          { device: 'cpu', floatDType },
        );
        const trace: number[] = [];
        const s = [...s0];
        for (let k = 0; k < 3; k++) {
          for (let j = 0; j < 4; j++) s[j]! += x[j]! * x[j]!;
          trace.push(...s);
        }
        let worst = 0;
        for (const [name, want] of [
          ['s', s],
          ['trace', trace],
        ] as const) {
          const got = out[name]!;
          assert.ok(got.data instanceof Float32Array, `${name}: an f16/bf16 output is read as f32`);
          for (let i = 0; i < want.length; i++) {
            const err = Math.abs(got.data[i]! - want[i]!);
            // s0 and x rounded once, x·x and each sum once per iteration, the output once.
            const bound = 16 * u * (1 + Math.abs(want[i]!));
            worst = Math.max(worst, err / bound);
            assert.ok(err <= bound, `${name}[${i}] = ${got.data[i]}, want ${want[i]} (bound ${bound})`);
          }
        }
        assert.ok(worst > 0, 'a 16-bit run agrees with float64 to the last bit: nothing was narrowed');
        const casts = ops.filter((o) => o.startsWith('cast:')).sort();
        assert.deepEqual(casts, [
          'cast:input:s0@cpu0',
          'cast:input:x@cpu0',
          'cast:output:s@cpu0',
          'cast:output:trace@cpu0',
        ]);
        assert.equal([...rt.liveTensors()].length, live, 'tensors left after the run');
      } finally {
        exec.close();
      }
    });
  }
});
