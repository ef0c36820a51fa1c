/**
 * If, Loop, Scan and the sequence ops on the CPU runtime (control/interpreter.ts), against the same
 * computation in float64 here: subgraphs that read outer values, a Loop whose condition is computed by
 * kernels (read back on the host), Scan with reversed directions and other axes, and the bad inputs — a
 * Loop that never ends (bounded, cancellable), a subgraph reading a value nobody provides, an op Tandem
 * does not run inside a body. No run leaves a tensor behind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TandemError } from '../../src/core/errors.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { OnnxExecutor, type OutputTensor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { encodeModel, floatTensor, int64Tensor, subgraph, type NodeSpec } from './build-model.js';

const BOOL = 9;
const INT64 = 7;
const random = (n: number, lo = 0.2, hi = 1.3): number[] =>
  Array.from({ length: n }, (_, i) => lo + (hi - lo) * Math.abs(Math.sin(i * 12.9898 + n) % 1));
const close = (got: ArrayLike<number>, want: readonly number[], what: string): void => {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++)
    assert.ok(
      Math.abs(got[i]! - want[i]!) <= 1e-5 + 1e-5 * Math.abs(want[i]!),
      `${what}[${i}] = ${got[i]}, want ${want[i]}`,
    );
};
const isCode = (code: string) => (err: unknown) => err instanceof TandemError && err.code === code;

/** A Loop node reading M and cond (either may be ''), carrying `carried`, with the body given. */
function loopModel(
  m: string,
  cond: string,
  body: ReturnType<typeof subgraph>,
  extra: NodeSpec[] = [],
): Uint8Array {
  return encodeModel({
    nodes: [
      ...extra,
      {
        op: 'Loop',
        inputs: [m, cond, 's0'],
        outputs: ['s', 'trace'],
        attrs: [{ name: 'body', g: body, type: 5 }],
      },
    ],
    inputs: [
      { name: 's0', dims: [3] },
      { name: 'x', dims: [3] },
      { name: 'limit', dims: [] },
    ],
    outputs: [
      { name: 's', dims: [3] },
      { name: 'trace', dims: ['T', 3] },
    ],
    initializers: [int64Tensor('two', [], [2]), { name: 'yes', dims: [], dataType: BOOL, int32Data: [1] }],
  });
}

/** s_out = s_in + x (x from the outer graph); cond_out = sum(s_out) < limit, computed by kernels. */
const accumulateBody = subgraph({
  nodes: [
    { op: 'Add', inputs: ['s_in', 'x'], outputs: ['s_out'] },
    { op: 'ReduceSum', inputs: ['s_out'], outputs: ['total'], attrs: [{ name: 'keepdims', i: 0, type: 2 }] },
    { op: 'Less', inputs: ['total', 'limit'], outputs: ['cond_out'] },
    { op: 'Identity', inputs: ['s_out'], outputs: ['scan'] },
  ],
  inputs: [
    { name: 'i', type: INT64, dims: [] },
    { name: 'cond_in', type: BOOL, dims: [] },
    { name: 's_in', dims: [3] },
  ],
  outputs: [
    { name: 'cond_out', type: BOOL, dims: [] },
    { name: 's_out', dims: [3] },
    { name: 'scan', dims: [3] },
  ],
});

describe('onnx control flow on the CPU', () => {
  let rt: Runtime;
  const live = () => [...rt.liveTensors()].length;
  /** A failed run's frees of tensors that running tasks still read happen when those tasks end. */
  const settled = async (): Promise<void> => {
    await rt.idle();
    await new Promise((r) => setImmediate(r));
  };
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  it('If runs the chosen branch, which reads an outer value, on kernels', async () => {
    const thenB = subgraph(
      {
        nodes: [{ op: 'Mul', inputs: ['x', 'x'], outputs: ['y1'] }],
        inputs: [],
        outputs: [{ name: 'y1', dims: [2, 3] }],
      },
      'then',
    );
    const elseB = subgraph(
      {
        nodes: [{ op: 'Add', inputs: ['x', 'k'], outputs: ['y2'] }],
        inputs: [],
        outputs: [{ name: 'y2', dims: [2, 3] }],
        initializers: [floatTensor('k', [3], [0.5, -1.5, 2.25])],
      },
      'else',
    );
    const exec = new OnnxExecutor(
      parseOnnxModel(
        encodeModel({
          nodes: [
            { op: 'Relu', inputs: ['xin'], outputs: ['x'] },
            {
              op: 'If',
              inputs: ['c'],
              outputs: ['y'],
              attrs: [
                { name: 'then_branch', g: thenB, type: 5 },
                { name: 'else_branch', g: elseB, type: 5 },
              ],
            },
          ],
          inputs: [
            { name: 'c', type: BOOL, dims: [] },
            { name: 'xin', dims: [2, 3] },
          ],
          outputs: [{ name: 'y', dims: [2, 3] }],
        }),
      ),
      rt,
    );
    const x = random(6, -1, 1);
    const relu = x.map((v) => Math.max(v, 0));
    const before = live();
    for (const c of [1, 0]) {
      const out = await exec.run(
        { c: { dims: [], data: [c] }, xin: { dims: [2, 3], data: x } },
        { device: 'cpu' },
      );
      const want = c ? relu.map((v) => v * v) : relu.map((v, i) => v + [0.5, -1.5, 2.25][i % 3]!);
      close(out['y']!.data, want, `If(${c})`);
      assert.ok(exec.lastPlanSteps >= 2, 'the branch ran kernels');
      assert.equal(live(), before, 'tensors left after the run');
    }
    exec.close();
  });

  it('Loop without a trip count stops when its kernel-computed condition turns false', async () => {
    const exec = new OnnxExecutor(parseOnnxModel(loopModel('', 'yes', accumulateBody)), rt);
    const s0 = random(3);
    const x = random(3, 0.4, 0.9);
    const limit = 9;
    const s = [...s0];
    const trace: number[] = [];
    for (;;) {
      for (let j = 0; j < 3; j++) s[j]! += x[j]!;
      trace.push(...s);
      if (!(s.reduce((a, b) => a + b, 0) < limit)) break;
    }
    const before = live();
    const out = await exec.run({
      s0: { dims: [3], data: s0 },
      x: { dims: [3], data: x },
      limit: { dims: [], data: [limit] },
    });
    assert.ok(trace.length / 3 > 2, 'the loop ran several iterations');
    close(out['s']!.data, s, 'Loop s');
    assert.deepEqual(out['trace']!.dims, [trace.length / 3, 3]);
    close(out['trace']!.data, trace, 'Loop scan output');
    assert.equal(live(), before, 'tensors left after the run');
    exec.close();
  });

  it('Loop with a trip count stops after M iterations', async () => {
    const exec = new OnnxExecutor(parseOnnxModel(loopModel('two', 'yes', accumulateBody)), rt);
    const s0 = random(3);
    const x = random(3, 0.1, 0.2);
    const out = await exec.run({
      s0: { dims: [3], data: s0 },
      x: { dims: [3], data: x },
      limit: { dims: [], data: [100] },
    });
    close(
      out['s']!.data,
      s0.map((v, j) => v + 2 * x[j]!),
      'Loop M=2',
    );
    assert.deepEqual(out['trace']!.dims, [2, 3]);
    exec.close();
  });

  it('Scan with reversed input and output directions along axis 1', async () => {
    const body = subgraph({
      nodes: [
        { op: 'Add', inputs: ['acc_in', 'col'], outputs: ['acc_out'] },
        { op: 'Mul', inputs: ['acc_out', 'col'], outputs: ['prod'] },
      ],
      inputs: [
        { name: 'acc_in', dims: [2] },
        { name: 'col', dims: [2] },
      ],
      outputs: [
        { name: 'acc_out', dims: [2] },
        { name: 'prod', dims: [2] },
      ],
    });
    const exec = new OnnxExecutor(
      parseOnnxModel(
        encodeModel({
          nodes: [
            {
              op: 'Scan',
              inputs: ['init', 'x'],
              outputs: ['acc', 'ys'],
              attrs: [
                { name: 'body', g: body, type: 5 },
                { name: 'num_scan_inputs', i: 1, type: 2 },
                { name: 'scan_input_axes', ints: [1], type: 7 },
                { name: 'scan_input_directions', ints: [1], type: 7 },
                { name: 'scan_output_axes', ints: [-1], type: 7 },
                { name: 'scan_output_directions', ints: [1], type: 7 },
              ],
            },
          ],
          inputs: [
            { name: 'init', dims: [2] },
            { name: 'x', dims: [2, 4] },
          ],
          outputs: [
            { name: 'acc', dims: [2] },
            { name: 'ys', dims: [2, 4] },
          ],
        }),
      ),
      rt,
    );
    const init = random(2);
    const x = random(8, -1, 1);
    const acc = [...init];
    const ys = new Array<number>(8).fill(0);
    for (let i = 0; i < 4; i++) {
      const col = 3 - i; // reversed input direction
      for (let r = 0; r < 2; r++) {
        acc[r]! += x[r * 4 + col]!;
        ys[r * 4 + (3 - i)] = acc[r]! * x[r * 4 + col]!; // reversed output direction, stacked on axis 1
      }
    }
    const out = await exec.run({ init: { dims: [2], data: init }, x: { dims: [2, 4], data: x } });
    close(out['acc']!.data, acc, 'Scan state');
    assert.deepEqual(out['ys']!.dims, [2, 4]);
    close(out['ys']!.data, ys, 'Scan output');
    exec.close();
  });

  it('sequence ops: split, erase, insert, length, at, concat with a new axis', async () => {
    const exec = new OnnxExecutor(
      parseOnnxModel(
        encodeModel({
          nodes: [
            {
              op: 'SplitToSequence',
              inputs: ['x'],
              outputs: ['s1'],
              attrs: [{ name: 'keepdims', i: 0, type: 2 }],
            },
            { op: 'SequenceErase', inputs: ['s1', 'minus1'], outputs: ['s2'] },
            { op: 'SequenceInsert', inputs: ['s2', 'y', 'zero'], outputs: ['s3'] },
            { op: 'SequenceLength', inputs: ['s3'], outputs: ['n'] },
            { op: 'SequenceAt', inputs: ['s3', 'minus1'], outputs: ['last'] },
            {
              op: 'ConcatFromSequence',
              inputs: ['s3'],
              outputs: ['cat'],
              attrs: [
                { name: 'axis', i: 1, type: 2 },
                { name: 'new_axis', i: 1, type: 2 },
              ],
            },
          ],
          inputs: [
            { name: 'x', dims: [4, 3] },
            { name: 'y', dims: [3] },
          ],
          outputs: [
            { name: 'n', type: INT64, dims: [] },
            { name: 'last', dims: [3] },
            { name: 'cat', dims: [3, 4] },
            { name: 's3', dims: [3], sequence: true },
          ],
          initializers: [int64Tensor('minus1', [], [-1]), int64Tensor('zero', [], [0])],
        }),
      ),
      rt,
    );
    const x = random(12, -2, 2);
    const y = random(3);
    const rows = [y, x.slice(0, 3), x.slice(3, 6), x.slice(6, 9)];
    const before = live();
    const out = await exec.runValues({ x: { dims: [4, 3], data: x }, y: { dims: [3], data: y } });
    assert.deepEqual(Array.from((out['n'] as OutputTensor).data), [4]);
    close((out['last'] as OutputTensor).data, rows[3]!, 'SequenceAt -1');
    const cat = out['cat'] as OutputTensor;
    assert.deepEqual(cat.dims, [3, 4]);
    close(
      cat.data,
      [0, 1, 2].flatMap((c) => rows.map((r) => r[c]!)),
      'ConcatFromSequence new_axis',
    );
    const seq = out['s3']!;
    assert.ok('sequence' in seq && seq.sequence.length === 4);
    close(seq.sequence[1]!.data, rows[1]!, 'sequence item');
    assert.equal(live(), before, 'tensors left after the run');
    await assert.rejects(
      exec.run({ x: { dims: [4, 3], data: x }, y: { dims: [3], data: y } }),
      isCode('TANDEM_ERR_UNSUPPORTED'),
      'run() answers tensors only',
    );
    exec.close();
  });

  it('a Loop whose condition never turns false ends with LIMIT, or CANCELLED when aborted', async () => {
    const forever = subgraph({
      nodes: [
        { op: 'Identity', inputs: ['cond_in'], outputs: ['cond_out'] },
        { op: 'Add', inputs: ['s_in', 'x'], outputs: ['s_out'] },
      ],
      inputs: [
        { name: 'i', type: INT64, dims: [] },
        { name: 'cond_in', type: BOOL, dims: [] },
        { name: 's_in', dims: [3] },
      ],
      outputs: [
        { name: 'cond_out', type: BOOL, dims: [] },
        { name: 's_out', dims: [3] },
      ],
    });
    const exec = new OnnxExecutor(parseOnnxModel(loopModel('', 'yes', forever)), rt);
    const feeds = {
      s0: { dims: [3], data: random(3) },
      x: { dims: [3], data: random(3) },
      limit: { dims: [], data: [1] },
    };
    const before = live();
    await assert.rejects(exec.run(feeds, { maxLoopIterations: 50 }), (err: unknown) => {
      assert.ok(isCode('TANDEM_ERR_LIMIT')(err), String(err));
      assert.match((err as Error).message, /Loop node .* 50 iterations/);
      return true;
    });
    await settled();
    assert.equal(live(), before, 'tensors left after the failed run');
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 20);
    await assert.rejects(
      exec.run(feeds, { maxLoopIterations: Infinity, signal: ctl.signal }),
      isCode('TANDEM_ERR_CANCELLED'),
    );
    await settled();
    assert.equal(live(), before, 'tensors left after the cancelled run');
    exec.close();
  });

  it('a subgraph reading a value nobody provides is BAD_DATA at load, naming it', () => {
    const body = subgraph(
      {
        nodes: [{ op: 'Add', inputs: ['x', 'ghost'], outputs: ['y1'] }],
        inputs: [],
        outputs: [{ name: 'y1', dims: [3] }],
      },
      'then',
    );
    const bytes = encodeModel({
      nodes: [
        {
          op: 'If',
          inputs: ['c'],
          outputs: ['y'],
          attrs: [
            { name: 'then_branch', g: body, type: 5 },
            { name: 'else_branch', g: body, type: 5 },
          ],
        },
      ],
      inputs: [
        { name: 'c', type: BOOL, dims: [] },
        { name: 'x', dims: [3] },
      ],
      outputs: [{ name: 'y', dims: [3] }],
    });
    assert.throws(
      () => parseOnnxModel(bytes),
      (err: unknown) =>
        isCode('TANDEM_ERR_BAD_DATA')(err) &&
        (err as TandemError).details?.['reason'] === 'dangling' &&
        /'ghost'/.test((err as Error).message),
    );
  });

  it('an op Tandem does not run inside a body is refused up front, naming op, domain and opset', () => {
    const body = subgraph({
      nodes: [
        { op: 'Identity', inputs: ['cond_in'], outputs: ['cond_out'] },
        { op: 'Bernoulli', inputs: ['s_in'], outputs: ['s_out'] },
      ],
      inputs: [
        { name: 'i', type: INT64, dims: [] },
        { name: 'cond_in', type: BOOL, dims: [] },
        { name: 's_in', dims: [3] },
      ],
      outputs: [
        { name: 'cond_out', type: BOOL, dims: [] },
        { name: 's_out', dims: [3] },
      ],
    });
    const model = parseOnnxModel(loopModel('two', 'yes', body));
    assert.throws(
      () => new OnnxExecutor(model, rt),
      (err: unknown) =>
        isCode('TANDEM_ERR_UNSUPPORTED')(err) &&
        (err as TandemError).details?.['op'] === 'Bernoulli' &&
        (err as TandemError).details?.['domain'] === 'ai.onnx' &&
        (err as TandemError).details?.['opset'] === 17,
    );
  });
});
