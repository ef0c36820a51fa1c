/**
 * The executor's bookkeeping on a real CPU runtime: each node becomes kernel tasks, intermediates are
 * freed once their last reader is submitted (no tensor outlives a run but the weights, and none after
 * close), the batch dimension follows the input, and bad inputs fail before anything runs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TandemError } from '../../src/core/errors.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { encodeModel, floatTensor, int64Tensor } from './build-model.js';

// x [N, 6] → Gemm(W 6×4, b) → Relu → Shape-driven Reshape to [N, 2, 2] → Softmax → Transpose.
const model = parseOnnxModel(
  encodeModel({
    nodes: [
      { op: 'Gemm', inputs: ['x', 'W', 'b'], outputs: ['h'], attrs: [{ name: 'alpha', f: 0.5, type: 1 }] },
      { op: 'Relu', inputs: ['h'], outputs: ['r'] },
      { op: 'Shape', inputs: ['x'], outputs: ['s'] },
      { op: 'Slice', inputs: ['s', 'zero', 'one'], outputs: ['n'] },
      { op: 'Concat', inputs: ['n', 'two2'], outputs: ['shape'], attrs: [{ name: 'axis', i: 0, type: 2 }] },
      { op: 'Reshape', inputs: ['r', 'shape'], outputs: ['r3'] },
      { op: 'Softmax', inputs: ['r3'], outputs: ['p'], attrs: [{ name: 'axis', i: -1, type: 2 }] },
      { op: 'Transpose', inputs: ['p'], outputs: ['y'], attrs: [{ name: 'perm', ints: [0, 2, 1], type: 7 }] },
    ],
    inputs: [{ name: 'x', dims: ['N', 6] }],
    outputs: [{ name: 'y', dims: ['N', 2, 2] }],
    initializers: [
      floatTensor(
        'W',
        [6, 4],
        Array.from({ length: 24 }, (_, i) => Math.cos(i) * 0.7),
      ),
      floatTensor('b', [4], [0.1, -0.3, 0.2, 0.05]),
      int64Tensor('zero', [1], [0]),
      int64Tensor('one', [1], [1]),
      int64Tensor('two2', [2], [2, 2]),
    ],
  }),
);

describe('onnx executor', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  it('matches the float64 graph for several batch sizes, holding only weights and I/O tensors between runs', async () => {
    const submitted: string[] = [];
    rt.addObserver({
      onTaskStart: (e) => void submitted.push(e.op),
      onTaskEnd: () => undefined,
      onTransfer: () => undefined,
    });
    const live = () => [...rt.liveTensors()].length;
    const before = live();
    const exec = new OnnxExecutor(model, rt);
    let runs = 0;
    for (const n of [1, 5, 3, 5]) {
      // Different values on every run: the kept input tensor of a shape must take the new ones.
      const x = Array.from({ length: n * 6 }, (_, i) => Math.sin(i * 1.3 + n + 0.7 * runs));
      const out = (await exec.run({ x: { dims: [n, 6], data: x } }, { device: 'cpu' })).y!;
      const ref = evaluateReference(model, { x: { dims: [n, 6], data: x } }).y!;
      assert.deepEqual(out.dims, [n, 2, 2]);
      out.data.forEach((v, i) =>
        assert.ok(Math.abs(v - ref.data[i]!) < 1e-6, `n=${n} [${i}] ${v} vs ${ref.data[i]}`),
      );
      await rt.idle();
      // Weights W and b stay, and the output of each batch size seen and its input when too large to be
      // known to the planner (> 16 values), kept for the next run of that shape (the second batch-5 run
      // reuses them); every intermediate was freed.
      const seen = [...new Set([1, 5, 3, 5].slice(0, ++runs))];
      const io = seen.map((b) => (b * 6 > 16 ? 2 : 1)).reduce((a, b) => a + b, 0);
      assert.equal(live() - before, 2 + io, `tensors left after a run of batch ${n}`);
      const ioBytes = seen.map((b) => 4 * (b * 4 + (b * 6 > 16 ? b * 6 : 0))).reduce((a, b) => a + b, 0);
      assert.equal(exec.ioBytes, ioBytes);
    }
    // The shape subgraph was folded: no task for Shape, Slice or Concat.
    for (const op of ['onnx_gemm', 'onnx_unary', 'copy', 'onnx_softmax', 'onnx_transpose'])
      assert.ok(submitted.includes(op), op);
    assert.ok(
      !submitted.some((k) => k === 'onnx_slice' || k === 'onnx_concat'),
      'the shape subgraph ran on the device',
    );
    exec.close();
    await rt.idle();
    assert.equal(live(), before);
  });

  it('rejects wrong shapes, dtypes and unknown inputs before submitting anything', async () => {
    const exec = new OnnxExecutor(model, rt);
    const cases: Array<[Record<string, { dims: number[]; data: number[]; type?: 'int64' }>, string]> = [
      [{ x: { dims: [2, 5], data: new Array(10).fill(1) } }, 'TANDEM_ERR_SHAPE'],
      [{ x: { dims: [2, 6], data: new Array(5).fill(1) } }, 'TANDEM_ERR_SHAPE'],
      [{ x: { dims: [2, 6], data: new Array(12).fill(1), type: 'int64' } }, 'TANDEM_ERR_DTYPE'],
      [
        { x: { dims: [1, 6], data: new Array(6).fill(1) }, z: { dims: [1], data: [1] } },
        'TANDEM_ERR_INVALID_ARGUMENT',
      ],
      [{}, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ];
    for (const [feeds, code] of cases) {
      await assert.rejects(
        exec.run(feeds, { device: 'cpu' }),
        (e: unknown) => e instanceof TandemError && e.code === code,
        JSON.stringify(Object.keys(feeds)),
      );
    }
    exec.close();
    await assert.rejects(
      exec.run({ x: { dims: [1, 6], data: new Array(6).fill(1) } }),
      (e: unknown) => e instanceof TandemError && e.code === 'TANDEM_ERR_CLOSED',
    );
  });
});

describe('onnx planner: activation fusion', () => {
  it('fuses Conv → LeakyRelu (→ Add of both) into one kernel, and not when another op reads the conv output', async () => {
    const rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
    try {
      const build = (extraReader: '' | 'add' | 'concat') =>
        parseOnnxModel(
          encodeModel({
            nodes: [
              {
                op: 'Conv',
                inputs: ['x', 'w', 'b'],
                outputs: ['c'],
                attrs: [{ name: 'pads', ints: [1, 1, 1, 1], type: 7 }],
              },
              { op: 'LeakyRelu', inputs: ['c'], outputs: ['y'], attrs: [{ name: 'alpha', f: 0.2, type: 1 }] },
              // Add(c, y) joins the conv's epilogue program; Concat(c, y) cannot, so c must be stored.
              ...(extraReader === 'add' ? [{ op: 'Add', inputs: ['c', 'y'], outputs: ['z'] }] : []),
              ...(extraReader === 'concat'
                ? [
                    {
                      op: 'Concat',
                      inputs: ['c', 'y'],
                      outputs: ['z'],
                      attrs: [{ name: 'axis', i: 1, type: 2 }],
                    },
                  ]
                : []),
            ],
            inputs: [{ name: 'x', dims: ['N', 2, 5, 5] }],
            outputs: [{ name: extraReader ? 'z' : 'y', dims: ['N', extraReader === 'concat' ? 6 : 3, 5, 5] }],
            initializers: [
              floatTensor(
                'w',
                [3, 2, 3, 3],
                Array.from({ length: 54 }, (_, i) => Math.sin(i) * 0.5),
              ),
              floatTensor('b', [3], [0.1, -0.4, 0.2]),
            ],
          }),
        );
      for (const extra of ['', 'add', 'concat'] as const) {
        const model = build(extra);
        const ops: string[] = [];
        rt.addObserver({
          onTaskStart: (e) => void ops.push(e.op),
          onTaskEnd: () => undefined,
          onTransfer: () => undefined,
        });
        const exec = new OnnxExecutor(model, rt);
        const x = Array.from({ length: 2 * 2 * 25 }, (_, i) => Math.cos(i * 0.7));
        const out = Object.values(
          await exec.run({ x: { dims: [2, 2, 5, 5], data: x } }, { device: 'cpu' }),
        )[0]!;
        const ref = Object.values(evaluateReference(model, { x: { dims: [2, 2, 5, 5], data: x } }))[0]!;
        out.data.forEach((v, i) =>
          assert.ok(Math.abs(v - ref.data[i]!) < 1e-5, `[${i}] ${v} vs ${ref.data[i]}`),
        );
        assert.equal(
          ops.includes('onnx_unary'),
          extra === 'concat',
          extra === 'concat' ? 'the activation must run on its own' : 'the activation was not fused',
        );
        assert.ok(!ops.includes('onnx_binary'), `${extra}: the Add was not fused`);
        exec.close();
      }
    } finally {
      await rt.close();
    }
  });
});
