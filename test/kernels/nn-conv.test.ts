/**
 * The conv group on the CPU beyond the shared conformance run (which uses the TS gemm engine): the
 * same cases through the OpenBLAS and WebAssembly engines, argument validation with stable codes and
 * messages that start with the op, and the modes that let accumulate=false skip reading dw/db.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DType, bytesPerElement } from '../../src/core/dtype.js';
import { type ErrorCode, isTandemError } from '../../src/core/errors.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import { wasmGemmStatus } from '../../src/devices/cpu/wasm/gemm-wasm.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { argMode } from '../../src/kernels/kernel.js';
import { OPENBLAS_REASON, cpuContext, cpuKernelOf, defOf, runCpuCase } from './cpu-harness.js';

const CONV_OPS = new Set(['conv2d', 'conv2d_backward', 'pool2d', 'pool2d_backward']);
const cases = CONFORMANCE_CASES.filter((c) => CONV_OPS.has(c.op));

void it('the conv group has conformance cases for every op and float dtype', () => {
  for (const op of CONV_OPS) {
    for (const dtype of ['f32', 'f64', 'f16', 'bf16']) {
      assert.ok(
        cases.some((c) => c.op === op && Object.values(c.args).every((a) => a.dtype === dtype)),
        `${op} ${dtype}`,
      );
    }
  }
});

const wasm = wasmGemmStatus();
for (const { engine, skip } of [
  { engine: 'openblas', skip: OPENBLAS_REASON ?? false },
  { engine: 'wasm', skip: wasm.reason ?? false },
] as const) {
  void describe(`conv group on the CPU, gemm engine ${engine}`, { skip }, () => {
    for (const c of cases.filter((k) => k.op.startsWith('conv2d'))) {
      void it(c.name, () => assert.deepEqual(runCpuCase(c, engine), []));
    }
  });
}

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

const x = t([2, 3, 7, 9]);
const w = t([5, 3, 3, 3]);
const b = t([5]);
const y = t([2, 5, 7, 9]); // padding 1
const conv = (over: Record<string, TensorDesc> = {}): Record<string, TensorDesc> => ({ x, w, b, y, ...over });
const back = (over: Record<string, TensorDesc> = {}): Record<string, TensorDesc> => ({
  dy: y,
  x,
  w,
  dx: x,
  dw: w,
  db: b,
  ...over,
});
const pooled = t([2, 3, 3, 4]); // kernel 2 of 7x9

const BAD: readonly BadCall[] = [
  {
    why: 'x of rank 3',
    op: 'conv2d',
    args: conv({ x: t([3, 7, 9]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'w with other input channels',
    op: 'conv2d',
    args: conv({ w: t([5, 2, 3, 3]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'b of the wrong length',
    op: 'conv2d',
    args: conv({ b: t([4]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'y of the wrong size (padding 0 gives 5x7)',
    op: 'conv2d',
    args: conv(),
    scalars: {},
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'a kernel larger than the padded input',
    op: 'conv2d',
    args: conv({ w: t([5, 3, 11, 3]), y: t([2, 5, 0, 9]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'stride 0',
    op: 'conv2d',
    args: conv(),
    scalars: { padding: 1, stride: 0 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'negative padding',
    op: 'conv2d',
    args: conv(),
    scalars: { padding: -1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'fractional stride',
    op: 'conv2d',
    args: conv(),
    scalars: { padding: 1, stride: 1.5 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unknown scalar',
    op: 'conv2d',
    args: conv(),
    scalars: { padding: 1, dilation: 2 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'mixed dtypes',
    op: 'conv2d',
    args: conv({ b: t([5], 'f64') }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'integer tensors',
    op: 'conv2d',
    args: conv({ x: t([2, 3, 7, 9], 'i32') }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'missing b',
    op: 'conv2d',
    args: { x, w, y },
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'dy of the wrong shape',
    op: 'conv2d_backward',
    args: back({ dy: t([2, 5, 5, 7]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'dx unlike x',
    op: 'conv2d_backward',
    args: back({ dx: t([2, 3, 9, 7]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'dw unlike w',
    op: 'conv2d_backward',
    args: back({ dw: t([5, 3, 3, 2]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'db of the wrong length',
    op: 'conv2d_backward',
    args: back({ db: t([3]) }),
    scalars: { padding: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'accumulate not a boolean',
    op: 'conv2d_backward',
    args: back(),
    scalars: { padding: 1, accumulate: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'pool op unknown',
    op: 'pool2d',
    args: { x, y: pooled },
    scalars: { op: 'min', kernel: 2 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'pool kernel missing',
    op: 'pool2d',
    args: { x, y: pooled },
    scalars: { op: 'max' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'pool kernel 0',
    op: 'pool2d',
    args: { x, y: pooled },
    scalars: { op: 'max', kernel: 0 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'pool padding over kernel/2',
    op: 'pool2d',
    args: { x, y: t([2, 3, 5, 6]) },
    scalars: { op: 'max', kernel: 2, padding: 2 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'pool window larger than x',
    op: 'pool2d',
    args: { x, y: t([2, 3, 0, 1]) },
    scalars: { op: 'avg', kernel: 8 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'pool y of the wrong shape',
    op: 'pool2d',
    args: { x, y: t([2, 3, 4, 4]) },
    scalars: { op: 'max', kernel: 2 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'pool dtypes differ',
    op: 'pool2d',
    args: { x, y: t([2, 3, 3, 4], 'f16') },
    scalars: { op: 'max', kernel: 2 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'pool backward dy of the wrong shape',
    op: 'pool2d_backward',
    args: { x, dy: t([2, 3, 3, 3]), dx: x },
    scalars: { op: 'max', kernel: 2 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'pool backward dx unlike x',
    op: 'pool2d_backward',
    args: { x, dy: pooled, dx: t([2, 3, 9, 7]) },
    scalars: { op: 'avg', kernel: 2 },
    code: 'TANDEM_ERR_SHAPE',
  },
];

void describe('conv group validation', () => {
  for (const bad of BAD) {
    void it(`${bad.op}: ${bad.why} → ${bad.code}`, () => {
      assert.throws(
        () => defOf(bad.op).validate(bad.args, bad.scalars),
        (e: unknown) => isTandemError(e, bad.code) && e.message.startsWith(`${bad.code}: ${bad.op}: `),
      );
    });
  }

  void it('well-formed calls pass', () => {
    defOf('conv2d').validate(conv(), { padding: 1 });
    defOf('conv2d').validate(conv({ y: t([2, 5, 3, 4]) }), { stride: 2 });
    defOf('conv2d_backward').validate(back(), { padding: 1, accumulate: true });
    defOf('pool2d').validate({ x, y: pooled }, { op: 'max', kernel: 2 });
    defOf('pool2d').validate({ x, y: t([2, 3, 4, 5]) }, { op: 'avg', kernel: 3, stride: 2, padding: 1 });
    defOf('pool2d_backward').validate({ x, dy: pooled, dx: x }, { op: 'avg', kernel: 2 });
  });

  void it('accumulate=false writes dw and db without reading them; true reads them', () => {
    const def = defOf('conv2d_backward');
    const mode = (scalars: Scalars, name: string): string =>
      argMode(
        def,
        def.args.findIndex((a) => a.name === name),
        scalars,
      );
    assert.deepEqual(
      ['dx', 'dw', 'db'].map((n) => mode({}, n)),
      ['w', 'w', 'w'],
    );
    assert.deepEqual(
      ['dx', 'dw', 'db'].map((n) => mode({ accumulate: true }, n)),
      ['w', 'rw', 'rw'],
    );
  });
});

void describe('pool2d max on the CPU: ties and NaN', () => {
  const run = (op: string, arrays: Float32Array[], shapes: number[][]): Float32Array[] => {
    const args = arrays.map((data, i) => ({ data, desc: t(shapes[i]!) }));
    cpuKernelOf(op)(args, { op: 'max', kernel: 2 }, cpuContext('ts'));
    return arrays;
  };
  // One 2x4 plane: window 0 is a tie (0.5 twice), window 1 holds a NaN after a larger value.
  const x = Float32Array.of(0.25, 0.5, 0.75, 0.125, 0.5, 0.125, NaN, 0.875);

  void it('the first maximum of a tie; a NaN wins its window', () => {
    const [, y] = run(
      'pool2d',
      [x, new Float32Array(2)],
      [
        [1, 1, 2, 4],
        [1, 1, 1, 2],
      ],
    );
    assert.equal(y![0], 0.5);
    assert.ok(Number.isNaN(y![1]));
  });

  void it('the gradient goes to that same element', () => {
    const [, , dx] = run(
      'pool2d_backward',
      [x, Float32Array.of(3, 5), new Float32Array(8).fill(NaN)],
      [
        [1, 1, 2, 4],
        [1, 1, 1, 2],
        [1, 1, 2, 4],
      ],
    );
    assert.deepEqual([...dx!], [0, 3, 0, 0, 0, 0, 5, 0]);
  });
});
