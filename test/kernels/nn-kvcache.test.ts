/**
 * The kvcache group on the CPU: every conformance case (random inputs, NaN-poisoned outputs, float64
 * reference) under several seeds, what a cache keeps outside the written cells, and malformed calls
 * with their stable codes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bytesPerElement, type DType } from '../../src/core/dtype.js';
import { type ErrorCode, isTandemError } from '../../src/core/errors.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { defOf, runCpuCase } from './cpu-harness.js';

const KV_OPS = new Set(['kv_append', 'kv_attention', 'embedding_at', 'gather_rows', 'topk_rows']);

function desc(shape: number[], dtype: DType = 'f32'): TensorDesc {
  return { shape, dtype, bytes: numel(shape) * bytesPerElement(dtype) };
}

function rejects(op: string, args: Record<string, TensorDesc>, scalars: Scalars, code: ErrorCode): void {
  assert.throws(
    () => defOf(op).validate(args, scalars),
    (e: unknown) => isTandemError(e) && e.code === code && e.message.includes(`${op}: `),
  );
}

void describe('kvcache ops on the CPU', () => {
  const cases = CONFORMANCE_CASES.filter((c) => KV_OPS.has(c.op));
  void it('has cases for every op and dtype', () => {
    assert.equal(new Set(cases.map((c) => c.op)).size, KV_OPS.size);
    assert.ok(cases.length >= 4 * 12);
  });
  for (const c of cases)
    void it(c.name, () => {
      for (const seed of [1, 2, 3]) assert.deepEqual(runCpuCase(c, 'ts', seed), []);
    });
});

void describe('kvcache ops reject malformed calls', () => {
  const qkv = desc([4, 24]);
  const cache = desc([2, 5, 8]);
  const idx = desc([4], 'i32');
  const kv = { qkv, slot: idx, pos: idx, kcache: cache, vcache: cache };
  void it('kv_attention: heads, shapes, dtypes', () => {
    const y = desc([4, 8]);
    rejects('kv_attention', { ...kv, y }, {}, 'TANDEM_ERR_INVALID_ARGUMENT');
    rejects('kv_attention', { ...kv, y }, { heads: 3 }, 'TANDEM_ERR_SHAPE');
    rejects('kv_attention', { ...kv, y: desc([4, 9]) }, { heads: 2 }, 'TANDEM_ERR_SHAPE');
    rejects('kv_attention', { ...kv, pos: desc([3], 'i32'), y }, { heads: 2 }, 'TANDEM_ERR_SHAPE');
    rejects('kv_attention', { ...kv, slot: desc([4], 'f32'), y }, { heads: 2 }, 'TANDEM_ERR_DTYPE');
    rejects('kv_attention', { ...kv, kcache: desc([2, 5, 8], 'bf16'), y }, { heads: 2 }, 'TANDEM_ERR_DTYPE');
    rejects('kv_attention', { ...kv, vcache: desc([2, 6, 8]), y }, { heads: 2 }, 'TANDEM_ERR_SHAPE');
    rejects('kv_attention', { ...kv, qkv: desc([4, 25]), y }, { heads: 1 }, 'TANDEM_ERR_SHAPE');
    rejects('kv_attention', { ...kv, y, extra: y }, { heads: 2 }, 'TANDEM_ERR_INVALID_ARGUMENT');
  });
  void it('kv_append: cache width must match the projection', () => {
    rejects('kv_append', { ...kv, kcache: desc([2, 5, 7]), vcache: desc([2, 5, 7]) }, {}, 'TANDEM_ERR_SHAPE');
    rejects('kv_append', kv, { heads: 2 }, 'TANDEM_ERR_INVALID_ARGUMENT');
  });
  void it('embedding_at and gather_rows', () => {
    const wte = desc([11, 8]);
    const wpe = desc([6, 8]);
    rejects(
      'embedding_at',
      { ids: idx, pos: desc([5], 'i32'), wte, wpe, y: desc([4, 8]) },
      {},
      'TANDEM_ERR_SHAPE',
    );
    rejects(
      'embedding_at',
      { ids: idx, pos: idx, wte, wpe: desc([6, 8], 'f16'), y: desc([4, 8]) },
      {},
      'TANDEM_ERR_DTYPE',
    );
    rejects('gather_rows', { x: desc([5, 8]), index: idx, y: desc([4, 9]) }, {}, 'TANDEM_ERR_SHAPE');
    rejects('gather_rows', { x: desc([5, 8]), index: desc([4]), y: desc([4, 8]) }, {}, 'TANDEM_ERR_DTYPE');
  });
});
