/**
 * The quantization operators on the CPU's kernels against the float64 graph, beyond ONNX's node tests:
 * per-axis int8 scales and zero points, DynamicQuantizeLinear on device data, MatMulInteger with
 * per-row / per-column zero points, ConvInteger with pads and groups, QLinearConv with per-channel
 * weight scales and a bias. Random values (seeded); integer results must match exactly.
 */
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { checkOp, int, ints, randoms, type OpCase } from './op-check.js';

const numel = (d: number[]) => d.reduce((a, b) => a * b, 1);
const U8 = 2;
const I8 = 3;
const I32 = 6;

describe('onnx quantization ops composed from kernels', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });
  const r = randoms(21);
  const f = (name: string, dims: number[], lo = -1, hi = 1) => ({
    name,
    dims,
    data: randoms(dims.length * 7 + name.length, lo, hi)(numel(dims)),
  });
  const q = (name: string, dims: number[], type: number) => {
    const [lo, hi] = type === U8 ? [0, 256] : type === I8 ? [-128, 128] : [-1000, 1000];
    return { name, dims, type, data: r(numel(dims)).map((v) => Math.floor(lo + ((v + 1) / 2) * (hi - lo))) };
  };
  const cases: Array<[string, OpCase]> = [
    [
      'QuantizeLinear int8 per axis 1',
      {
        op: 'QuantizeLinear',
        opset: 13,
        inputs: [f('x', [2, 3, 5], -3, 3), f('s', [3], 0.01, 0.05), q('z', [3], I8)],
        outputs: ['y'],
      },
    ],
    [
      'DequantizeLinear int8 per axis -1',
      {
        op: 'DequantizeLinear',
        opset: 13,
        attrs: [int('axis', -1)],
        inputs: [q('x', [4, 5], I8), f('s', [5], 0.01, 0.2), q('z', [5], I8)],
        outputs: ['y'],
      },
    ],
    [
      'DynamicQuantizeLinear on device data',
      { op: 'DynamicQuantizeLinear', opset: 11, inputs: [f('x', [5, 7], -2, 5)], outputs: ['y', 's', 'z'] },
    ],
    [
      'MatMulInteger per-row and per-column zero points',
      {
        op: 'MatMulInteger',
        opset: 10,
        // a comes from DynamicQuantizeLinear: integer data on the device, not folded on the host.
        inputs: [q('a', [5, 6], U8), q('b', [6, 4], U8), q('az', [5], U8), q('bz', [4], U8)],
        outputs: ['y'],
        pre: {
          nodes: [{ op: 'DynamicQuantizeLinear', inputs: ['af'], outputs: ['a', 'as', 'az0'] }],
          feeds: [f('af', [5, 6], -1, 3)],
        },
      },
    ],
    [
      'ConvInteger pads, strides, group 2',
      {
        op: 'ConvInteger',
        opset: 10,
        attrs: [ints('pads', [1, 0, 1, 2]), ints('strides', [2, 1]), int('group', 2)],
        inputs: [q('x', [1, 4, 5, 5], U8), q('w', [2, 2, 3, 3], U8), q('xz', [], U8), q('wz', [2], U8)],
        outputs: ['y'],
        pre: {
          nodes: [{ op: 'DynamicQuantizeLinear', inputs: ['xf'], outputs: ['x', 'xs', 'xz0'] }],
          feeds: [f('xf', [1, 4, 5, 5], -2, 2)],
        },
      },
    ],
    [
      'QLinearConv per-channel weight scales and a bias',
      {
        op: 'QLinearConv',
        opset: 10,
        attrs: [ints('pads', [1, 1, 1, 1])],
        inputs: [
          q('x', [1, 2, 4, 4], U8),
          f('xs', [], 0.01, 0.02),
          q('xz', [], U8),
          q('w', [3, 2, 3, 3], I8),
          f('ws', [3], 0.001, 0.005),
          { name: 'wz', dims: [3], type: I8, data: [0, 0, 0] },
          f('ys', [], 0.05, 0.1),
          q('yz', [], U8),
          q('b', [3], I32),
        ],
        outputs: ['y'],
      },
    ],
  ];
  for (const [name, c] of cases) it(name, () => checkOp(rt, c, 1e-6).then(() => undefined));
});
