/**
 * The executor's opt-in per-node profile (RunOptions.profile): one entry per device step with its
 * tasks, op types aggregated, the same outputs as an unprofiled run, and nothing recorded when off.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { encodeModel, floatTensor } from './build-model.js';

// x [N, 2, 4, 4] → Conv 3x3 → Relu → Add(c) → Mul(c) (one fused step) → Concat with x along channels.
const model = parseOnnxModel(
  encodeModel({
    nodes: [
      {
        op: 'Conv',
        inputs: ['x', 'W'],
        outputs: ['h'],
        attrs: [{ name: 'pads', ints: [1, 1, 1, 1], type: 7 }],
      },
      { op: 'Relu', inputs: ['h'], outputs: ['r'] },
      { op: 'Add', inputs: ['r', 'c'], outputs: ['a'] },
      { op: 'Mul', inputs: ['a', 'c'], outputs: ['m'] },
      { op: 'Concat', inputs: ['m', 'x'], outputs: ['y'], attrs: [{ name: 'axis', i: 1, type: 2 }] },
    ],
    inputs: [{ name: 'x', dims: ['N', 2, 4, 4] }],
    outputs: [{ name: 'y', dims: ['N', 5, 4, 4] }],
    initializers: [
      floatTensor(
        'W',
        [3, 2, 3, 3],
        Array.from({ length: 54 }, (_, i) => Math.sin(i) * 0.3),
      ),
      floatTensor('c', [1], [1.5]),
    ],
  }),
);

describe('onnx executor profile', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  it('times every step, counts its tasks and aggregates by op type, with unchanged outputs', async () => {
    const exec = new OnnxExecutor(model, rt);
    const x = { dims: [2, 2, 4, 4], data: Array.from({ length: 64 }, (_, i) => Math.cos(i * 0.7)) };
    const plain = (await exec.run({ x }, { device: 'cpu' })).y!;
    assert.equal(exec.lastProfile, undefined, 'a profile without asking for one');
    const profiled = (await exec.run({ x }, { device: 'cpu', profile: true })).y!;
    assert.deepEqual(Array.from(profiled.data), Array.from(plain.data));
    const p = exec.lastProfile!;
    assert.equal(p.steps, 2); // Conv with Relu, Add and Mul as its epilogue (src/onnx/fuse.ts), Concat
    // Concat is a fill of y on the device and one task per input, the fused Conv one (its missing bias
    // a constant zero vector).
    assert.equal(
      p.tasks,
      p.byOp.reduce((s, o) => s + o.tasks, 0),
    );
    assert.equal(p.tasks, 5); // and the output's read-back
    assert.deepEqual(p.byOp.map((o) => o.op).sort(), ['Concat', 'Conv+chain', 'Input', 'Output']);
    // The input's host-side upload and the output's read-back are entries of their own.
    const io = p.top
      .filter((n) => n.op === 'Input' || n.op === 'Output')
      .map((n) => [n.op, n.node, n.output]);
    assert.deepEqual(io.sort(), [
      ['Input', 'x', [2, 2, 4, 4]],
      ['Output', 'y', [2, 5, 4, 4]],
    ]);
    assert.equal(p.byOp.find((o) => o.op === 'Concat')!.tasks, 3);
    const sum = p.byOp.reduce((s, o) => s + o.ms, 0);
    assert.ok(Math.abs(sum - p.stepsMs) < 1e-9 && p.stepsMs > 0);
    assert.ok(Math.abs(p.byOp.reduce((s, o) => s + o.share, 0) - 1) < 1e-9);
    for (let i = 1; i < p.top.length; i++) assert.ok(p.top[i - 1]!.ms >= p.top[i]!.ms, 'top not sorted');
    const conv = p.top.find((n) => n.op === 'Conv+chain')!;
    assert.deepEqual(conv.inputs, [[2, 2, 4, 4], [3, 2, 3, 3], [3]]);
    assert.deepEqual(conv.output, [2, 3, 4, 4]);
    assert.ok(conv.submitMs >= 0 && conv.submitMs <= conv.ms);
    exec.close();
  });
});
