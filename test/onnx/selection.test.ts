/**
 * Ops whose output size depends on data: Compress on device data (its host-known condition as gather
 * indices) against the float64 graph, and Unique / NonMaxSuppression refused as unsupported when the
 * data deciding the size is computed during the run (never a guessed size).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { encodeModel } from './build-model.js';
import { checkOp, int, randoms } from './op-check.js';

describe('onnx ops with data-dependent output sizes', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  for (const [label, axis, cond] of [
    ['axis 1', 1, [1, 0, 1, 1, 0]],
    ['axis -1, condition shorter than the axis', -1, [0, 1]],
    ['no axis (flattened)', undefined, [1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1]],
  ] as const) {
    it(`Compress ${label} on device data`, async () => {
      const r = randoms(3);
      await checkOp(rt, {
        op: 'Compress',
        opset: 11,
        attrs: axis === undefined ? [] : [int('axis', axis)],
        inputs: [
          { name: 'x', dims: [4, 5, 3], data: r(60) },
          { name: 'cond', dims: [cond.length], data: [...cond], type: 9 },
        ],
        outputs: ['y'],
      });
    });
  }

  const refuse = async (op: string, inputs: Array<{ name: string; dims: number[] }>, outputs: string[]) => {
    // The first input passes through Relu first: computed during the run, so its values are unknown.
    const model = parseOnnxModel(
      encodeModel({
        opset: 11,
        nodes: [
          { op: 'Relu', inputs: [inputs[0]!.name], outputs: ['r'] },
          { op, inputs: ['r', ...inputs.slice(1).map((v) => v.name)], outputs },
        ],
        inputs: inputs.map((v) => ({ name: v.name, dims: v.dims })),
        outputs: outputs.map((name) => ({ name, dims: [] })),
      }),
    );
    const exec = new OnnxExecutor(model, rt);
    const r = randoms(5);
    const feeds = Object.fromEntries(
      inputs.map((v) => [v.name, { dims: v.dims, data: r(v.dims.reduce((a, b) => a * b, 1)) }]),
    );
    await assert.rejects(exec.run(feeds, { device: 'cpu' }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'TANDEM_ERR_UNSUPPORTED');
      assert.match(e.message, new RegExp(op));
      return true;
    });
    exec.close();
  };

  it('refuses Unique on computed data', () => refuse('Unique', [{ name: 'x', dims: [3, 4] }], ['y']));
  it('refuses NonMaxSuppression on computed boxes', () =>
    refuse(
      'NonMaxSuppression',
      [
        { name: 'boxes', dims: [1, 6, 4] },
        { name: 'scores', dims: [1, 1, 6] },
      ],
      ['sel'],
    ));
});
