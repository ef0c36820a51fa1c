/**
 * Ops composed from existing kernels on the CPU against the float64 graph, with the attribute values
 * and shapes ONNX's node tests leave out: Tile on device data, integer-base Pow, Dropout's mask, Celu,
 * MeanVarianceNormalization, LRN and ReverseSequence. Inputs larger than the planner's host-known size,
 * so every node runs on kernels; random values (seeded).
 */
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { checkOp, float, int, ints, randoms, str, type OpCase } from './op-check.js';

const numel = (d: number[]) => d.reduce((a, b) => a * b, 1);

/** Flat positions in [1, 2, 6, 6] of a 2×2-window max over [1, 2, 3, 3] (a fixed cell per window). */
function unpoolIndices(): number[] {
  const out: number[] = [];
  for (let ch = 0; ch < 2; ch++)
    for (let y = 0; y < 3; y++)
      for (let x = 0; x < 3; x++) out.push(ch * 36 + (2 * y + ((x + ch) % 2)) * 6 + 2 * x + (y % 2));
  return out;
}

describe('onnx ops composed from existing kernels', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });
  const r = randoms(11);
  const x = (dims: number[], name = 'x') => ({ name, dims, data: r(numel(dims)) });

  const cases: Array<[string, OpCase]> = [
    [
      'Tile [2,3,4] by [3,1,2]',
      {
        op: 'Tile',
        inputs: [x([2, 3, 4]), { name: 'reps', dims: [3], data: [3, 1, 2], type: 7 }],
        outputs: ['y'],
      },
    ],
    [
      'Tile [17] by [2]',
      { op: 'Tile', inputs: [x([17]), { name: 'reps', dims: [1], data: [2], type: 7 }], outputs: ['y'] },
    ],
    [
      'Pow int32 base, float exponent',
      {
        op: 'Pow',
        opset: 15,
        inputs: [
          { name: 'b', dims: [4, 5], data: Array.from({ length: 20 }, (_, i) => (i % 7) - 3), type: 6 },
          { name: 'e', dims: [5], data: [0, 1, 2, 3, 0.5] },
        ],
        outputs: ['y'],
      },
    ],
    [
      'Dropout inference with mask',
      { op: 'Dropout', opset: 13, inputs: [x([3, 7])], outputs: ['y', 'mask'] },
    ],
    [
      'Dropout training with ratio 0',
      {
        op: 'Dropout',
        opset: 13,
        inputs: [
          x([3, 7]),
          { name: 'ratio', dims: [], data: [0] },
          { name: 'train', dims: [], data: [1], type: 9 },
        ],
        outputs: ['y', 'mask'],
      },
    ],
    [
      'Celu alpha 2',
      { op: 'Celu', opset: 12, attrs: [float('alpha', 2)], inputs: [x([4, 6])], outputs: ['y'] },
    ],
    [
      'MVN axes [1]',
      {
        op: 'MeanVarianceNormalization',
        opset: 13,
        attrs: [ints('axes', [1])],
        inputs: [x([3, 5, 2])],
        outputs: ['y'],
      },
    ],
    [
      'MVN default axes',
      { op: 'MeanVarianceNormalization', opset: 13, inputs: [x([2, 3, 2, 4])], outputs: ['y'] },
    ],
    [
      'LRN size 4 on [2,6,5] (asymmetric window)',
      {
        op: 'LRN',
        opset: 13,
        attrs: [int('size', 4), float('alpha', 0.3), float('beta', 0.6), float('bias', 1.5)],
        inputs: [x([2, 6, 5])],
        outputs: ['y'],
      },
    ],
    [
      'LRN size 3 on [1,5,3,4]',
      { op: 'LRN', opset: 13, attrs: [int('size', 3)], inputs: [x([1, 5, 3, 4])], outputs: ['y'] },
    ],
    [
      'ReverseSequence batch_axis 0',
      {
        op: 'ReverseSequence',
        opset: 10,
        attrs: [int('batch_axis', 0), int('time_axis', 1)],
        inputs: [x([3, 5, 2]), { name: 'lens', dims: [3], data: [5, 0, 3], type: 7 }],
        outputs: ['y'],
      },
    ],
    [
      'DFT complex, axis 2, dft_length 7 (zero-padded)',
      {
        op: 'DFT',
        opset: 17,
        attrs: [int('axis', 2)],
        inputs: [x([2, 3, 5, 2]), { name: 'n', dims: [], type: 7, data: [7] }],
        outputs: ['y'],
      },
    ],
    [
      'DFT real, onesided, dft_length 4 (truncated)',
      {
        op: 'DFT',
        opset: 17,
        attrs: [int('onesided', 1)],
        inputs: [x([3, 6, 1]), { name: 'n', dims: [], type: 7, data: [4] }],
        outputs: ['y'],
      },
    ],
    [
      'DFT inverse complex',
      { op: 'DFT', opset: 17, attrs: [int('inverse', 1)], inputs: [x([2, 9, 2])], outputs: ['y'] },
    ],
    [
      'STFT complex signal, frame_length 6, step 3',
      {
        op: 'STFT',
        opset: 17,
        inputs: [
          x([2, 20, 2]),
          { name: 'step', dims: [], type: 7, data: [3] },
          '',
          { name: 'len', dims: [], type: 7, data: [6] },
        ],
        outputs: ['y'],
      },
    ],
    [
      'STFT real signal with a window, two-sided',
      {
        op: 'STFT',
        opset: 17,
        attrs: [int('onesided', 0)],
        inputs: [x([1, 30, 1]), { name: 'step', dims: [], type: 7, data: [4] }, x([8], 'w')],
        outputs: ['y'],
      },
    ],
    [
      'GatherElements at rank 7 (flattened around the axis)',
      {
        op: 'GatherElements',
        opset: 13,
        attrs: [int('axis', 3)],
        inputs: [
          x([2, 1, 2, 3, 2, 1, 2]),
          {
            name: 'i',
            dims: [2, 1, 2, 4, 2, 1, 2],
            type: 7,
            data: Array.from({ length: 64 }, (_, k) => (k * 7) % 3),
          },
        ],
        outputs: ['y'],
      },
    ],
    [
      '3-d MaxPool: pads, strides, dilations, ceil mode',
      {
        op: 'MaxPool',
        opset: 12,
        attrs: [
          ints('kernel_shape', [2, 3, 2]),
          ints('strides', [2, 1, 2]),
          ints('dilations', [1, 2, 1]),
          ints('pads', [1, 0, 1, 0, 2, 1]),
          int('ceil_mode', 1),
        ],
        inputs: [x([2, 2, 5, 6, 5])],
        outputs: ['y'],
      },
    ],
    [
      '3-d AveragePool counting pads, ceil mode',
      {
        op: 'AveragePool',
        opset: 11,
        attrs: [
          ints('kernel_shape', [3, 2, 2]),
          ints('strides', [2, 2, 1]),
          ints('pads', [1, 1, 0, 1, 0, 1]),
          int('count_include_pad', 1),
          int('ceil_mode', 1),
        ],
        inputs: [x([1, 3, 6, 5, 4])],
        outputs: ['y'],
      },
    ],
    [
      '3-d AveragePool auto_pad SAME_UPPER',
      {
        op: 'AveragePool',
        opset: 11,
        attrs: [ints('kernel_shape', [2, 3, 3]), ints('strides', [1, 2, 2]), str('auto_pad', 'SAME_UPPER')],
        inputs: [x([1, 2, 4, 5, 6])],
        outputs: ['y'],
      },
    ],
    [
      '1-d MaxPool with Indices',
      {
        op: 'MaxPool',
        opset: 12,
        attrs: [ints('kernel_shape', [3]), ints('strides', [2]), ints('pads', [1, 1])],
        inputs: [x([2, 3, 9])],
        outputs: ['y', 'i'],
      },
    ],
    [
      '2-d MaxPool with Indices, storage_order 1, ceil mode',
      {
        op: 'MaxPool',
        opset: 12,
        attrs: [
          ints('kernel_shape', [2, 3]),
          ints('strides', [2, 2]),
          int('storage_order', 1),
          int('ceil_mode', 1),
        ],
        inputs: [x([1, 2, 5, 6])],
        outputs: ['y', 'i'],
      },
    ],
    [
      'Slice at rank 7 (backward, strided and whole axes)',
      {
        op: 'Slice',
        opset: 13,
        inputs: [
          x([2, 3, 2, 2, 2, 2, 3]),
          { name: 'starts', dims: [3], type: 7, data: [2, 0, 0] },
          { name: 'ends', dims: [3], type: 7, data: [-10, 2, 3] },
          { name: 'axes', dims: [3], type: 7, data: [1, 4, 6] },
          { name: 'steps', dims: [3], type: 7, data: [-1, 1, 2] },
        ],
        outputs: ['y'],
      },
    ],
    [
      'MaxUnpool into a larger output_shape',
      {
        op: 'MaxUnpool',
        opset: 11,
        attrs: [ints('kernel_shape', [2, 2]), ints('strides', [2, 2])],
        inputs: [
          x([1, 2, 3, 3]),
          // Each value's window position in the unpooled [1, 2, 6, 6] (one cell of its 2×2 window).
          { name: 'i', dims: [1, 2, 3, 3], type: 7, data: unpoolIndices() },
          { name: 'shape', dims: [4], type: 7, data: [1, 2, 7, 8] },
        ],
        outputs: ['y'],
      },
    ],
  ];
  for (const [name, c] of cases) it(name, () => checkOp(rt, c, 1e-5).then(() => undefined));
});

describe('onnx training-mode BatchNormalization', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });
  const r = randoms(31);
  const v = (name: string, dims: number[], lo = -1, hi = 1) => ({
    name,
    dims,
    data: r(numel(dims)).map((e) => lo + ((e + 1) / 2) * (hi - lo)),
  });
  const bn = (outputs: string[]): OpCase => ({
    op: 'BatchNormalization',
    opset: 15,
    attrs: [int('training_mode', 1), float('momentum', 0.8), float('epsilon', 1e-3)],
    inputs: [v('x', [3, 4, 2, 3]), v('s', [4]), v('b', [4]), v('m', [4]), v('var', [4], 0.5, 2)],
    outputs,
  });
  it('with running statistics', () => checkOp(rt, bn(['y', 'rm', 'rv'])).then(() => undefined));
  it('after a Conv, y only: not folded into the conv as an inference BatchNormalization', () => {
    // Constant weights and parameters: what the planner folds into the conv in inference mode.
    const params = bn([]).inputs.slice(1) as Array<{ name: string; dims: number[]; data: number[] }>;
    return checkOp(rt, {
      ...bn(['y']),
      inputs: [{ name: 'c', dims: [3, 4, 2, 3], data: [] }, ...params],
      pre: {
        nodes: [{ op: 'Conv', inputs: ['x', 'w'], outputs: ['c'], attrs: [ints('pads', [1, 1, 1, 1])] }],
        feeds: [v('x', [3, 2, 2, 3])],
        constants: [v('w', [4, 2, 3, 3]), ...params],
      },
    }).then(() => undefined);
  });
});
