/** Malformed calls must throw a TandemError with the right code; well-formed ones must not. */
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

interface BadCall {
  readonly why: string;
  readonly op: string;
  readonly args: Record<string, TensorDesc>;
  readonly scalars: Scalars;
  readonly code: ErrorCode;
}

const m23 = t([2, 3]);
const m34 = t([3, 4]);
const m24 = t([2, 4]);

const BAD: readonly BadCall[] = [
  {
    why: 'inner sizes differ',
    op: 'gemm',
    args: { a: m23, b: t([4, 4]), c: m24 },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'c has the wrong shape',
    op: 'gemm',
    args: { a: m23, b: m34, c: t([4, 2]) },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'transA changes m and k',
    op: 'gemm',
    args: { a: m23, b: m34, c: m24 },
    scalars: { transA: true },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'rank 3 operand',
    op: 'gemm',
    args: { a: t([1, 2, 3]), b: m34, c: m24 },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'mixed dtypes',
    op: 'gemm',
    args: { a: m23, b: t([3, 4], 'f64'), c: m24 },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'integer gemm',
    op: 'gemm',
    args: { a: t([2, 3], 'i32'), b: t([3, 4], 'i32'), c: t([2, 4], 'i32') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'alpha not a number',
    op: 'gemm',
    args: { a: m23, b: m34, c: m24 },
    scalars: { alpha: 'two' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'transA not a boolean',
    op: 'gemm',
    args: { a: m23, b: m34, c: m24 },
    scalars: { transA: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unknown scalar (typo)',
    op: 'gemm',
    args: { a: m23, b: m34, c: m24 },
    scalars: { tranA: true },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unknown precision',
    op: 'gemm',
    args: { a: m23, b: m34, c: m24 },
    scalars: { precision: 'fp8' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'tf32 on f64',
    op: 'gemm',
    args: { a: t([2, 3], 'f64'), b: t([3, 4], 'f64'), c: t([2, 4], 'f64') },
    scalars: { precision: 'tf32' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'missing c',
    op: 'gemm',
    args: { a: m23, b: m34 },
    scalars: {},
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'extra argument',
    op: 'gemm',
    args: { a: m23, b: m34, c: m24, d: m24 },
    scalars: {},
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'axpy shapes differ',
    op: 'axpy',
    args: { x: t([5]), y: t([6]) },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'axpy dtypes differ',
    op: 'axpy',
    args: { x: t([5]), y: t([5], 'f16') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'axpy alpha infinite',
    op: 'axpy',
    args: { x: t([5]), y: t([5]) },
    scalars: { alpha: Infinity },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'scale without alpha',
    op: 'scale',
    args: { x: t([5]) },
    scalars: {},
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'scale of u8',
    op: 'scale',
    args: { x: t([5], 'u8') },
    scalars: { alpha: 2 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'unary unknown op',
    op: 'unary',
    args: { x: t([5]), y: t([5]) },
    scalars: { op: 'erf' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unary without op',
    op: 'unary',
    args: { x: t([5]), y: t([5]) },
    scalars: {},
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unary shapes differ',
    op: 'unary',
    args: { x: t([5]), y: t([1, 5]) },
    scalars: { op: 'exp' },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'unary on i32',
    op: 'unary',
    args: { x: t([5], 'i32'), y: t([5], 'i32') },
    scalars: { op: 'neg' },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'binary broadcast',
    op: 'binary',
    args: { a: t([2, 3]), b: t([3]), c: t([2, 3]) },
    scalars: { op: 'add' },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'binary dtype of c',
    op: 'binary',
    args: { a: t([3]), b: t([3]), c: t([3], 'f64') },
    scalars: { op: 'add' },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'reduce axis out of range',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([2]) },
    scalars: { op: 'sum', axis: 2 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'reduce axis not integer',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([2]) },
    scalars: { op: 'sum', axis: 0.5 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'reduce without axis',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([2]) },
    scalars: { op: 'sum' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'reduce axis and all',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([1]) },
    scalars: { op: 'sum', axis: 0, all: true },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'reduce y keeps the axis',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([2, 1]) },
    scalars: { op: 'max', axis: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'reduce all into [2]',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([2]) },
    scalars: { op: 'mean', all: true },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'reduce unknown op',
    op: 'reduce',
    args: { x: t([2, 3]), y: t([2]) },
    scalars: { op: 'prod', axis: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'fill i32 with a fraction',
    op: 'fill',
    args: { y: t([3], 'i32') },
    scalars: { value: 1.5 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'fill u8 with 256',
    op: 'fill',
    args: { y: t([3], 'u8') },
    scalars: { value: 256 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'fill without value',
    op: 'fill',
    args: { y: t([3]) },
    scalars: {},
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'copy across dtypes',
    op: 'copy',
    args: { x: t([3]), y: t([3], 'f64') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'copy sizes differ (another shape of the same size is a reshape, allowed)',
    op: 'copy',
    args: { x: t([3, 2]), y: t([5]) },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'cast shapes differ',
    op: 'cast',
    args: { x: t([3]), y: t([4], 'i32') },
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'noop with an argument',
    op: 'noop',
    args: { x: t([3]) },
    scalars: {},
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
];

void describe('kernel validation rejects malformed calls', () => {
  for (const bad of BAD) {
    void it(`${bad.op}: ${bad.why} -> ${bad.code}`, () => {
      assert.throws(
        () => defOf(bad.op).validate(bad.args, bad.scalars),
        (e: unknown) => isTandemError(e, bad.code) && e.message.startsWith(`${bad.code}: ${bad.op}`),
      );
    });
  }
});

void describe('kernel validation accepts well-formed calls', () => {
  void it('gemm with transposes', () => {
    defOf('gemm').validate(
      { a: t([3, 2]), b: t([4, 3]), c: m24 },
      { transA: true, transB: true, alpha: 2, beta: 1 },
    );
  });
  void it('reduce of a vector into [] or [1], negative axis', () => {
    defOf('reduce').validate({ x: t([5]), y: t([1]) }, { op: 'sum', axis: -1 });
    defOf('reduce').validate({ x: t([5]), y: t([]) }, { op: 'sum', axis: 0 });
    defOf('reduce').validate({ x: t([2, 3, 4]), y: t([2, 4]) }, { op: 'max', axis: -2 });
  });
  void it('cast across every pair', () => {
    defOf('cast').validate({ x: t([3], 'u8'), y: t([3], 'bf16') }, {});
  });
});

void describe('access modes and costs', () => {
  void it('gemm writes c only when beta = 0', () => {
    assert.equal(argMode(defOf('gemm'), 2, {}), 'w');
    assert.equal(argMode(defOf('gemm'), 2, { beta: 0 }), 'w');
    assert.equal(argMode(defOf('gemm'), 2, { beta: 1 }), 'rw');
  });
  void it('gemm cost is 2mnk flops and the bytes of A, B and C', () => {
    const cost = defOf('gemm').cost({ a: t([2, 3]), b: m34, c: m24 }, { beta: 1 });
    assert.deepEqual(cost, { flops: 2 * 2 * 3 * 4, bytes: 4 * (6 + 12 + 2 * 8) });
  });
  void it('element-wise costs scale with size and dtype', () => {
    assert.deepEqual(defOf('axpy').cost({ x: t([10], 'f64'), y: t([10], 'f64') }, {}), {
      flops: 20,
      bytes: 240,
    });
    assert.deepEqual(defOf('cast').cost({ x: t([10], 'u8'), y: t([10], 'f32') }, {}), {
      flops: 10,
      bytes: 50,
    });
  });
});
