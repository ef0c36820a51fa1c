/**
 * The plan's fusions (src/onnx/fuse.ts) on a real CPU runtime: BatchNormalization and per-channel
 * Add/Mul folded into a conv's weights, element-wise chains (PaddleOCR's hard-swish spelled as
 * Add/Clip/Mul/Div) fused into the conv's epilogue or one onnx_map, equal to the float64 graph and to
 * the unfused plan; values read outside a chain (or graph outputs) are kept.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { bindPlan } from '../../src/onnx/plan.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { encodeModel, floatTensor } from './build-model.js';

const ramp = (n: number, f: number, a = 0.5) => Array.from({ length: n }, (_, i) => Math.sin(i * f) * a);

/**
 * x [N,3,6,6] → Conv 3x3 (no bias) → BatchNorm → Add(per-channel [1,4,1,1]) → Mul(scalar) →
 * hard-swish as Add(3)/Clip(0,6)/Mul/Div(6) → Sub(scalar) [→ Tanh → Mul(Tanh, t) → Max(t, 0.1)] with
 * `extraOutput` also returning the hard-swish's Clip value (so it must stay).
 */
function model(extraOutput: boolean) {
  const k = (name: string, v: number) => floatTensor(name, [], [v]);
  return parseOnnxModel(
    encodeModel({
      nodes: [
        {
          op: 'Conv',
          inputs: ['x', 'w'],
          outputs: ['c'],
          attrs: [{ name: 'pads', ints: [1, 1, 1, 1], type: 7 }],
        },
        { op: 'BatchNormalization', inputs: ['c', 'bs', 'bb', 'bm', 'bv'], outputs: ['n'] },
        { op: 'Add', inputs: ['n', 'pc'], outputs: ['a'] },
        { op: 'Mul', inputs: ['s', 'a'], outputs: ['m'] },
        { op: 'Add', inputs: ['m', 'three'], outputs: ['h1'] },
        { op: 'Clip', inputs: ['h1', 'zero', 'six'], outputs: ['h2'] },
        { op: 'Mul', inputs: ['m', 'h2'], outputs: ['h3'] },
        { op: 'Div', inputs: ['h3', 'six'], outputs: ['h4'] },
        { op: 'Sub', inputs: ['h4', 's'], outputs: ['t'] },
        {
          op: 'Transpose',
          inputs: ['t'],
          outputs: ['tt'],
          attrs: [{ name: 'perm', ints: [0, 1, 3, 2], type: 7 }],
        },
        // A standalone chain on the transposed map: Tanh → Mul(t', tanh) → Max(·, 0.1).
        { op: 'Tanh', inputs: ['tt'], outputs: ['u1'] },
        { op: 'Mul', inputs: ['tt', 'u1'], outputs: ['u2'] },
        { op: 'Max', inputs: ['u2', 'tenth'], outputs: ['y'] },
      ],
      inputs: [{ name: 'x', dims: ['N', 3, 6, 6] }],
      outputs: [
        { name: 'y', dims: ['N', 4, 6, 6] },
        ...(extraOutput ? [{ name: 'h2', dims: ['N', 4, 6, 6] }] : []),
      ],
      initializers: [
        floatTensor('w', [4, 3, 3, 3], ramp(108, 0.37)),
        floatTensor('bs', [4], [1.1, 0.9, -0.7, 1.3]),
        floatTensor('bb', [4], [0.1, -0.2, 0.3, 0.05]),
        floatTensor('bm', [4], [0.02, -0.1, 0.2, 0]),
        floatTensor('bv', [4], [0.5, 1.5, 0.8, 2]),
        floatTensor('pc', [1, 4, 1, 1], [0.3, -0.3, 0.6, 1]),
        k('s', 1.7),
        k('three', 3),
        k('zero', 0),
        k('six', 6),
        k('tenth', 0.1),
      ],
    }),
  );
}

describe('onnx planner: fusions', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  it('folds BatchNorm and per-channel Add/Mul into the conv and fuses both chains, matching the float64 graph', async () => {
    for (const extra of [false, true]) {
      const m = model(extra);
      const bound = new Map([['x', { type: 'float' as const, dims: [2, 3, 6, 6] }]]);
      const plan = bindPlan(m, bound);
      const ops = plan.steps.map((s) => s.node.opType);
      // Conv (+ BN, Add, Mul folded; the hard-swish and Sub as its epilogue), Transpose, one chain.
      // With h2 a graph output, m's readers Add and Mul(m, h2) cannot both join one chain ending in h2:
      // the conv stores m, Add→Clip is one chain (h2), Mul(m, h2) runs alone, Div→Sub is a chain.
      assert.deepEqual(
        ops,
        extra
          ? ['Conv', 'ElementwiseChain', 'Mul', 'ElementwiseChain', 'Transpose', 'ElementwiseChain']
          : ['Conv', 'Transpose', 'ElementwiseChain'],
      );
      const conv = plan.steps[0]!;
      assert.equal(conv.node.inputs.length, 3, 'the folded conv has a bias');
      assert.ok(conv.node.inputs[1]!.includes('@fold'), conv.node.inputs[1]);
      assert.equal(
        conv.call.epilogue,
        extra ? undefined : 'add(r0,3);clip(r1,0,6);mul(r0,r2);div(r3,6);sub(r4,1.7000000476837158)',
      );
      if (extra) assert.equal(plan.steps[1]!.call.epilogue, 'add(r0,3);clip(r1,0,6)');
      assert.equal(plan.steps.at(-1)!.call.epilogue, 'tanh(r0);mul(r0,r1);max(r2,0.10000000149011612)');
      const x = ramp(2 * 3 * 36, 0.11, 2);
      const exec = new OnnxExecutor(m, rt);
      const out = await exec.run({ x: { dims: [2, 3, 6, 6], data: x } }, { device: 'cpu' });
      const ref = evaluateReference(m, { x: { dims: [2, 3, 6, 6], data: x } });
      for (const name of Object.keys(ref)) {
        assert.equal(out[name]!.data.length, ref[name]!.data.length);
        out[name]!.data.forEach((v, i) =>
          assert.ok(Math.abs(v - ref[name]!.data[i]!) < 2e-5, `${name}[${i}] ${v} vs ${ref[name]!.data[i]}`),
        );
      }
      exec.close();
    }
  });

  it('TANDEM_ONNX_FUSE=0 keeps every node a step (only Conv→activation fused)', async () => {
    const m = model(false);
    const bound = new Map([['x', { type: 'float' as const, dims: [1, 3, 6, 6] }]]);
    process.env.TANDEM_ONNX_FUSE = '0';
    try {
      assert.equal(bindPlan(m, bound).steps.length, 13);
    } finally {
      delete process.env.TANDEM_ONNX_FUSE;
    }
    assert.equal(bindPlan(m, bound).steps.length, 3);
  });
});
