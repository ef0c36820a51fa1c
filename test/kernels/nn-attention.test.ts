/**
 * The attention ops' validation (stable codes, messages that start with the op) and the CPU kernels on
 * every GEMM engine present (the CPU conformance suite runs non-gemm ops on the TS engine only).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DType, bytesPerElement } from '../../src/core/dtype.js';
import { type ErrorCode, isTandemError } from '../../src/core/errors.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import { wasmGemmStatus } from '../../src/devices/cpu/wasm/gemm-wasm.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { type GemmEngine, OPENBLAS_REASON, defOf, runCpuCase } from './cpu-harness.js';

function t(shape: number[], dtype: DType = 'f32'): TensorDesc {
  return { shape, dtype, bytes: numel(shape) * bytesPerElement(dtype) };
}

// B = 2, T = 5, C = 12 (H = 3, d = 4)
const qkv = t([2, 5, 36]);
const rows = t([2, 5, 12]);
const lse = t([2, 3, 5]);
const fwd = { qkv, y: rows, lse };
const bwd = { dy: rows, qkv, y: rows, lse, dqkv: qkv };

interface BadCall {
  readonly why: string;
  readonly op: 'attention' | 'attention_backward';
  readonly args: Record<string, TensorDesc>;
  readonly scalars: Scalars;
  readonly code: ErrorCode;
}

const BAD: readonly BadCall[] = [
  { why: 'heads missing', op: 'attention', args: fwd, scalars: {}, code: 'TANDEM_ERR_INVALID_ARGUMENT' },
  { why: 'heads 0', op: 'attention', args: fwd, scalars: { heads: 0 }, code: 'TANDEM_ERR_INVALID_ARGUMENT' },
  {
    why: 'heads 1.5',
    op: 'attention',
    args: fwd,
    scalars: { heads: 1.5 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'scale not finite',
    op: 'attention',
    args: fwd,
    scalars: { heads: 3, scale: Infinity },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'scale a string',
    op: 'attention_backward',
    args: bwd,
    scalars: { heads: 3, scale: '0.5' },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unknown scalar',
    op: 'attention',
    args: fwd,
    scalars: { heads: 3, causal: true },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  { why: 'C % heads != 0', op: 'attention', args: fwd, scalars: { heads: 5 }, code: 'TANDEM_ERR_SHAPE' },
  {
    why: 'qkv last axis not 3C',
    op: 'attention',
    args: { ...fwd, qkv: t([2, 5, 35]) },
    scalars: { heads: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'qkv rank 2',
    op: 'attention',
    args: { ...fwd, qkv: t([10, 36]) },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'qkv i32',
    op: 'attention',
    args: { ...fwd, qkv: t([2, 5, 36], 'i32') },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'y wrong shape',
    op: 'attention',
    args: { ...fwd, y: t([2, 5, 36]) },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'y wrong dtype',
    op: 'attention',
    args: { ...fwd, y: t([2, 5, 12], 'bf16') },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'lse [B,T,H]',
    op: 'attention',
    args: { ...fwd, lse: t([2, 5, 3]) },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'lse bf16 for bf16 qkv',
    op: 'attention',
    args: { qkv: t([2, 5, 36], 'bf16'), y: t([2, 5, 12], 'bf16'), lse: t([2, 3, 5], 'bf16') },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'lse f32 for f64 qkv',
    op: 'attention',
    args: { qkv: t([2, 5, 36], 'f64'), y: t([2, 5, 12], 'f64'), lse },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'missing lse',
    op: 'attention',
    args: { qkv, y: rows },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'dy wrong shape',
    op: 'attention_backward',
    args: { ...bwd, dy: t([2, 4, 12]) },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'dqkv wrong shape',
    op: 'attention_backward',
    args: { ...bwd, dqkv: rows },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'dqkv wrong dtype',
    op: 'attention_backward',
    args: { ...bwd, dqkv: t([2, 5, 36], 'f16') },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'lse wrong heads',
    op: 'attention_backward',
    args: { ...bwd, lse: t([2, 4, 5]) },
    scalars: { heads: 3 },
    code: 'TANDEM_ERR_SHAPE',
  },
];

void describe('attention validation', () => {
  for (const bad of BAD) {
    void it(`${bad.op}: ${bad.why}`, () => {
      assert.throws(
        () => defOf(bad.op).validate(bad.args, bad.scalars),
        (e: unknown) => isTandemError(e, bad.code) && e.message.startsWith(`${bad.code}: ${bad.op}: `),
      );
    });
  }
  void it('accepts well-formed calls (default and explicit scale, f64 with f64 lse)', () => {
    defOf('attention').validate(fwd, { heads: 3 });
    defOf('attention_backward').validate(bwd, { heads: 3, scale: 0.25 });
    const q64 = t([2, 5, 36], 'f64');
    const r64 = t([2, 5, 12], 'f64');
    defOf('attention').validate({ qkv: q64, y: r64, lse: t([2, 3, 5], 'f64') }, { heads: 3 });
  });
  void it('costs the causal FLOPs: 4·B·H·d·T(T+1)/2 forward, 2.5x backward', () => {
    const f = defOf('attention').cost(fwd, { heads: 3 }).flops;
    assert.equal(f, 4 * 2 * 3 * 4 * 15);
    assert.equal(defOf('attention_backward').cost(bwd, { heads: 3 }).flops, 2.5 * f);
  });
});

const wasm = wasmGemmStatus();
const ENGINES: readonly { engine: GemmEngine; skip: string | false }[] = [
  { engine: 'wasm', skip: wasm.reason ?? false },
  { engine: 'openblas', skip: OPENBLAS_REASON ?? false },
];
const SAMPLE = CONFORMANCE_CASES.filter((c) => c.op.startsWith('attention') && /T(33|65)/.test(c.name));

for (const { engine, skip } of ENGINES) {
  void describe(`attention cpu kernels, gemm engine ${engine}`, { skip }, () => {
    for (const c of SAMPLE) {
      void it(c.name, () => {
        assert.deepEqual(runCpuCase(c, engine), []);
      });
    }
  });
}
