/**
 * Which tensor-core attention kernels a call gets: v5 (the FA2-style forward, v0's backward) from sm_80
 * on and v0 before, unless TANDEM_ATTN_MMA asks for v0 (the first kernels), v1 (ldmatrix.x4,
 * ex2.approx), v2 (v1 with the single-pass backward), v3 (v2 with the FA2-style forward) or v4 (v3 with
 * the single pass in halves), and only for head dims 32 and 64 (others: v0);
 * a forced v1/v2 on a call they do not take is an error, not a silent fallback (the GPU tests force each
 * kernel).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { mmaPathVersion } from '../../src/kernels/attention/cuda.js';
import {
  type AttentionLaunch,
  defaultMmaVersion,
  mmaVersionRequested,
} from '../../src/kernels/attention/cuda-plan.js';

const launch = (headDim: number): AttentionLaunch => ({
  batch: 1,
  seq: 8,
  heads: 1,
  headDim,
  scale: 1 / Math.sqrt(headDim),
  f64: 0,
  delta: 0,
});

test('attention tensor-core versions: v5 from sm_80 on, TANDEM_ATTN_MMA=v0…v5, head dims 32 and 64 only', () => {
  assert.equal(defaultMmaVersion('sm_90'), 'v5');
  assert.equal(defaultMmaVersion('sm_80'), 'v5');
  assert.equal(defaultMmaVersion('sm_75'), 'v0');
  assert.equal(defaultMmaVersion('compute_90a'), 'v0');
  assert.equal(mmaVersionRequested({}, 'v5'), 'v5');
  assert.equal(mmaVersionRequested({ TANDEM_ATTN_MMA: 'v0' }, 'v5'), 'v0');
  assert.equal(mmaVersionRequested({}), 'v0');
  assert.equal(mmaVersionRequested({ TANDEM_ATTN_MMA: 'v1' }), 'v1');
  assert.equal(mmaVersionRequested({ TANDEM_ATTN_MMA: 'v2' }), 'v2');
  assert.equal(mmaVersionRequested({ TANDEM_ATTN_MMA: '' }), 'v0');
  assert.throws(
    () => mmaVersionRequested({ TANDEM_ATTN_MMA: 'fast' }),
    (e: unknown) =>
      isTandemError(e) && /TANDEM_ATTN_MMA must be one of v0, v1, v2, v3, v4, v5, got "fast"/.test(e.message),
  );
  const saved = process.env['TANDEM_ATTN_MMA'];
  try {
    delete process.env['TANDEM_ATTN_MMA'];
    assert.equal(mmaPathVersion('auto', true, launch(64), 'attention', 'sm_90'), 'v5', 'default on Hopper');
    assert.equal(mmaPathVersion('auto', true, launch(32), 'attention_backward', 'sm_80'), 'v5');
    assert.equal(mmaPathVersion('auto', true, launch(64), 'attention', 'sm_75'), 'v0', 'Turing: v0');
    assert.equal(mmaPathVersion('auto', true, launch(48), 'attention', 'sm_90'), 'v0', 'd 48: v0');
    for (const v of ['v0', 'v1', 'v2', 'v3', 'v4', 'v5'] as const) {
      process.env['TANDEM_ATTN_MMA'] = v;
      assert.equal(mmaPathVersion('auto', true, launch(64), 'attention', 'sm_90'), v);
      assert.equal(mmaPathVersion('auto', true, launch(32), 'attention', 'sm_90'), v);
      assert.equal(
        mmaPathVersion('auto', true, launch(48), 'attention', 'sm_90'),
        'v0',
        'd 48: the current kernels',
      );
      assert.equal(
        mmaPathVersion('tensor-core', true, launch(64), 'attention', 'sm_90'),
        'v0',
        'forced current',
      );
    }
  } finally {
    if (saved === undefined) delete process.env['TANDEM_ATTN_MMA'];
    else process.env['TANDEM_ATTN_MMA'] = saved;
  }
  assert.equal(mmaPathVersion('tensor-core-v1', true, launch(64), 'attention', 'sm_90'), 'v1');
  assert.equal(mmaPathVersion('tensor-core-v2', true, launch(32), 'attention_backward', 'sm_90'), 'v2');
  assert.equal(mmaPathVersion('tensor-core-v3', true, launch(64), 'attention', 'sm_90'), 'v3');
  assert.equal(mmaVersionRequested({ TANDEM_ATTN_MMA: 'v3' }), 'v3');
  assert.equal(mmaPathVersion('tensor-core-v4', true, launch(32), 'attention_backward', 'sm_90'), 'v4');
  assert.equal(mmaPathVersion('tensor-core-v5', true, launch(64), 'attention_backward', 'sm_90'), 'v5');
  assert.equal(mmaVersionRequested({ TANDEM_ATTN_MMA: 'v5' }), 'v5');
  assert.throws(
    () => mmaPathVersion('tensor-core-v2', true, launch(16), 'attention', 'sm_90'),
    /v2 needs a head dim of 32 or 64/,
  );
  assert.throws(
    () => mmaPathVersion('tensor-core-v1', false, launch(64), 'attention_backward', 'sm_90'),
    /does not fit/,
  );
  assert.throws(() => mmaPathVersion('tensor-core', false, launch(64), 'attention', 'sm_90'), /does not fit/);
  assert.equal(mmaPathVersion('generic', false, launch(64), 'attention', 'sm_90'), 'v0');
});
