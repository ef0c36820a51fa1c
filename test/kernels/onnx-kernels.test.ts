/**
 * The ONNX kernels (docs/onnx-kernels.md) on the CPU: every onnx_ conformance case (random inputs,
 * poisoned outputs, float64 references) with the OpenBLAS engine where it loads (the ts engine runs
 * them in test/kernels/conformance.test.ts), and malformed calls rejected with stable codes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TandemError } from '../../src/core/errors.js';
import { bytesPerElement, type DType } from '../../src/core/dtype.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { OPENBLAS_REASON, defOf, runCpuCase } from './cpu-harness.js';

const cases = CONFORMANCE_CASES.filter((c) => c.op.startsWith('onnx_'));

void describe('onnx kernels on the cpu (openblas engine)', { skip: OPENBLAS_REASON ?? false }, () => {
  for (const c of cases) void it(c.name, () => assert.deepEqual(runCpuCase(c, 'openblas'), []));
});

function desc(shape: number[], dtype: DType = 'f32'): TensorDesc {
  return { shape, dtype, bytes: shape.reduce((a, b) => a * b, 1) * bytesPerElement(dtype) };
}

function rejects(op: string, args: Record<string, TensorDesc>, scalars: Scalars, code: string): void {
  assert.throws(
    () => defOf(op).validate(args, scalars),
    (e: unknown) => e instanceof TandemError && e.code === code && e.message.includes(`${op}: `),
  );
}

void describe('onnx kernels reject malformed calls', () => {
  void it('onnx_binary: shapes that do not broadcast, a wrong output shape, mixed dtypes, an unknown op', () => {
    rejects(
      'onnx_binary',
      { a: desc([2, 3]), b: desc([4]), c: desc([2, 3]) },
      { op: 'add' },
      'TANDEM_ERR_SHAPE',
    );
    rejects(
      'onnx_binary',
      { a: desc([2, 3]), b: desc([3]), c: desc([2, 4]) },
      { op: 'add' },
      'TANDEM_ERR_SHAPE',
    );
    rejects(
      'onnx_binary',
      { a: desc([3]), b: desc([3], 'f16'), c: desc([3]) },
      { op: 'add' },
      'TANDEM_ERR_DTYPE',
    );
    rejects(
      'onnx_binary',
      { a: desc([3]), b: desc([3]), c: desc([3]) },
      { op: 'mod' },
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
  });
  void it('onnx_unary: an unknown scalar, a non-float dtype', () => {
    rejects(
      'onnx_unary',
      { x: desc([3]), y: desc([3]) },
      { op: 'relu', alfa: 1 },
      'TANDEM_ERR_INVALID_ARGUMENT',
    );
    rejects('onnx_unary', { x: desc([3], 'i32'), y: desc([3], 'i32') }, { op: 'relu' }, 'TANDEM_ERR_DTYPE');
  });
  void it('onnx_map: malformed programs; onnx_conv: an epilogue with too many constants', () => {
    const x = desc([2, 3]);
    for (const program of [
      'add(r1,1)', // reads a register before it is written
      'add(r0)', // one operand
      'relu(2)', // a unary op on a constant
      'clip(r0,0)', // a missing bound
      'frobnicate(r0)',
      'add(r0,abc)',
      'add(r0,1);;',
      Array.from({ length: 17 }, (_, i) => `add(r${i},${i + 0.5})`).join(';'), // 17 constants
      Array.from({ length: 33 }, (_, i) => `relu(r${i})`).join(';'), // 33 instructions
    ])
      rejects('onnx_map', { x, y: desc([2, 3]) }, { program }, 'TANDEM_ERR_INVALID_ARGUMENT');
    rejects('onnx_map', { x, y: desc([3, 2]) }, { program: 'relu(r0)' }, 'TANDEM_ERR_SHAPE');
    const conv = { x: desc([1, 2, 4, 4]), w: desc([3, 2, 1, 1]), b: desc([3]), y: desc([1, 3, 4, 4]) };
    const nine = Array.from({ length: 9 }, (_, i) => `add(r${i},${i + 0.25})`).join(';');
    rejects('onnx_conv', conv, { epilogue: nine }, 'TANDEM_ERR_INVALID_ARGUMENT');
    // The activation's constants count too: 7 in the program + leaky_relu's alpha is within 8.
    defOf('onnx_conv').validate(conv, {
      epilogue: nine.split(';').slice(0, 7).join(';'),
      activation: 'leaky_relu',
    });
  });
});
