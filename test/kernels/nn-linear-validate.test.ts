/** The linear group's definitions: malformed calls throw the documented code with the op's name first. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DType, bytesPerElement } from '../../src/core/dtype.js';
import { type ErrorCode, isTandemError } from '../../src/core/errors.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import { argMode } from '../../src/kernels/kernel.js';
import { defOf } from './cpu-harness.js';

function t(shape: number[], dtype: DType = 'f32'): TensorDesc {
  return { shape, dtype, bytes: numel(shape) * bytesPerElement(dtype) };
}

const [x, w, b, y] = [t([4, 3]), t([5, 3]), t([5]), t([4, 5])];

const BAD: readonly [string, string, Record<string, TensorDesc>, Scalars, ErrorCode][] = [
  ['w has the wrong inner size', 'linear', { x, w: t([5, 2]), b, y }, {}, 'TANDEM_ERR_SHAPE'],
  ['b has the wrong length', 'linear', { x, w, b: t([4]), y }, {}, 'TANDEM_ERR_SHAPE'],
  ['y has the wrong shape', 'linear', { x, w, b, y: t([5, 4]) }, {}, 'TANDEM_ERR_SHAPE'],
  ['b is a matrix', 'linear', { x, w, b: t([1, 5]), y }, {}, 'TANDEM_ERR_SHAPE'],
  ['mixed dtypes', 'linear', { x, w: t([5, 3], 'f16'), b, y }, {}, 'TANDEM_ERR_DTYPE'],
  ['integer tensors', 'linear', { x: t([4, 3], 'i32'), w, b, y }, {}, 'TANDEM_ERR_DTYPE'],
  ['a scalar linear does not take', 'linear', { x, w, b, y }, { act: 'gelu' }, 'TANDEM_ERR_INVALID_ARGUMENT'],
  ['a missing argument', 'linear', { x, w, y }, {}, 'TANDEM_ERR_INVALID_ARGUMENT'],
  [
    'an unknown activation',
    'linear_act',
    { x, w, b, pre: y, y },
    { act: 'tanh' },
    'TANDEM_ERR_INVALID_ARGUMENT',
  ],
  ['no activation', 'linear_act', { x, w, b, pre: y, y }, {}, 'TANDEM_ERR_INVALID_ARGUMENT'],
  ['pre has the wrong shape', 'linear_act', { x, w, b, pre: x, y }, { act: 'relu' }, 'TANDEM_ERR_SHAPE'],
  [
    'dx_act: w rows differ from dy columns',
    'linear_dx_act',
    { dy: y, w: t([4, 3]), pre: x, dx: x },
    { act: 'gelu' },
    'TANDEM_ERR_SHAPE',
  ],
  [
    'dx_act: pre has the wrong shape',
    'linear_dx_act',
    { dy: y, w, pre: y, dx: x },
    { act: 'gelu' },
    'TANDEM_ERR_SHAPE',
  ],
  [
    'dw: x rows differ from dy rows',
    'linear_dw',
    { dy: y, x: t([3, 3]), dw: w, db: b },
    {},
    'TANDEM_ERR_SHAPE',
  ],
  ['dw: db has the wrong length', 'linear_dw', { dy: y, x, dw: w, db: t([3]) }, {}, 'TANDEM_ERR_SHAPE'],
  [
    'dw: accumulate is not a boolean',
    'linear_dw',
    { dy: y, x, dw: w, db: b },
    { accumulate: 1 },
    'TANDEM_ERR_INVALID_ARGUMENT',
  ],
  ['activation: shapes differ', 'activation', { x, y }, { op: 'gelu' }, 'TANDEM_ERR_SHAPE'],
  [
    'activation: dtypes differ',
    'activation',
    { x, y: t([4, 3], 'bf16') },
    { op: 'relu' },
    'TANDEM_ERR_DTYPE',
  ],
  [
    'activation_backward: unknown op',
    'activation_backward',
    { x, dy: x, dx: x },
    { op: 'sigmoid' },
    'TANDEM_ERR_INVALID_ARGUMENT',
  ],
  [
    'activation_backward: dy shape',
    'activation_backward',
    { x, dy: y, dx: x },
    { op: 'gelu' },
    'TANDEM_ERR_SHAPE',
  ],
];

void describe('linear group validation', () => {
  for (const [why, op, args, scalars, code] of BAD) {
    void it(`${op}: ${why} -> ${code}`, () => {
      assert.throws(
        () => defOf(op).validate(args, scalars),
        (e: unknown) =>
          isTandemError(e) && e.code === code && e.message.replace(`${code}: `, '').startsWith(`${op}: `),
      );
    });
  }

  void it('well-formed calls pass, M = 0 and K = 0 included', () => {
    defOf('linear').validate({ x, w, b, y }, {});
    defOf('linear').validate({ x: t([0, 3]), w, b, y: t([0, 5]) }, {});
    defOf('linear').validate({ x: t([4, 0]), w: t([5, 0]), b, y }, {});
    defOf('linear_act').validate({ x, w, b, pre: y, y }, { act: 'gelu' });
    defOf('linear_dx_act').validate({ dy: y, w, pre: x, dx: x }, { act: 'relu' });
    defOf('linear_dw').validate({ dy: y, x, dw: w, db: b }, { accumulate: true });
    defOf('activation_backward').validate({ x, dy: x, dx: x }, { op: 'gelu', accumulate: false });
  });

  void it('gradients are written, not read, unless accumulate is set', () => {
    const dw = defOf('linear_dw');
    assert.equal(argMode(dw, 2, {}), 'w');
    assert.equal(argMode(dw, 3, { accumulate: false }), 'w');
    assert.equal(argMode(dw, 2, { accumulate: true }), 'rw');
    assert.equal(argMode(dw, 3, { accumulate: true }), 'rw');
    const ab = defOf('activation_backward');
    assert.equal(argMode(ab, 2, {}), 'w');
    assert.equal(argMode(ab, 2, { accumulate: true }), 'rw');
  });
});
