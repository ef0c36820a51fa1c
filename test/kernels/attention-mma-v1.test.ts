/**
 * Which tensor-core attention kernels a call gets: the current ones unless TANDEM_ATTN_MMA=v1 asks for
 * v1 (and the head dim is 32 or 64); a forced v1 on a head dim it does not take is an error, not a
 * silent fallback (the GPU tests force each kernel).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mmaPathV1 } from '../../src/kernels/attention/cuda.js';
import { type AttentionLaunch, mmaV1Requested } from '../../src/kernels/attention/cuda-plan.js';

const launch = (headDim: number): AttentionLaunch => ({
  batch: 1,
  seq: 8,
  heads: 1,
  headDim,
  scale: 1 / Math.sqrt(headDim),
  f64: 0,
  delta: 0,
});

test('attention tensor-core v1: opt-in by TANDEM_ATTN_MMA=v1, head dims 32 and 64 only', () => {
  assert.equal(mmaV1Requested({}), false);
  assert.equal(mmaV1Requested({ TANDEM_ATTN_MMA: 'v1' }), true);
  assert.equal(mmaV1Requested({ TANDEM_ATTN_MMA: 'v0' }), false);
  const saved = process.env['TANDEM_ATTN_MMA'];
  try {
    delete process.env['TANDEM_ATTN_MMA'];
    assert.equal(mmaPathV1('auto', true, launch(64), 'attention'), false, 'default: the current kernels');
    process.env['TANDEM_ATTN_MMA'] = 'v1';
    assert.equal(mmaPathV1('auto', true, launch(64), 'attention'), true);
    assert.equal(mmaPathV1('auto', true, launch(32), 'attention'), true);
    assert.equal(mmaPathV1('auto', true, launch(48), 'attention'), false, 'd 48: the current kernels');
    assert.equal(mmaPathV1('tensor-core', true, launch(64), 'attention'), false, 'forced current');
  } finally {
    if (saved === undefined) delete process.env['TANDEM_ATTN_MMA'];
    else process.env['TANDEM_ATTN_MMA'] = saved;
  }
  assert.equal(mmaPathV1('tensor-core-v1', true, launch(64), 'attention'), true);
  assert.throws(
    () => mmaPathV1('tensor-core-v1', true, launch(16), 'attention'),
    /v1 needs a head dim of 32 or 64/,
  );
  assert.throws(() => mmaPathV1('tensor-core-v1', false, launch(64), 'attention_backward'), /does not fit/);
  assert.throws(() => mmaPathV1('tensor-core', false, launch(64), 'attention'), /does not fit/);
  assert.equal(mmaPathV1('generic', false, launch(64), 'attention'), false);
});
