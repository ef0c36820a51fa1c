/**
 * The optim ops on CUDA at sizes the conformance cases do not reach: more elements than one grid
 * covers (the grid-stride loops wrap), and sumsq over many blocks and capped partial counts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { epsilon } from '../../src/core/dtype.js';
import type { ConformanceCase } from '../../src/kernels/conformance-cases.js';
import { cudaDevice, runCudaCase } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
if (!device) console.log(`# skip cuda optim: ${reason}`);

/** 65536 blocks × 256 threads + 3: every grid-stride loop takes a second turn. */
const BIG = (1 << 24) + 3;
const PARAM = [BIG];

const CASES: ConformanceCase[] = [
  {
    name: 'sumsq f32 over 2^24+3 elements',
    op: 'sumsq',
    args: { x: { shape: PARAM, dtype: 'f32' }, acc: { shape: [1], dtype: 'f32', range: 'positive' } },
    scalars: {},
    rtol: 4 * epsilon('f32'),
    atol: 0,
  },
  {
    name: 'sumsq bf16 over 2^24+3 elements',
    op: 'sumsq',
    args: { x: { shape: PARAM, dtype: 'bf16' }, acc: { shape: [1], dtype: 'f32', range: 'positive' } },
    scalars: {},
    rtol: 4 * epsilon('f32'),
    atol: 0,
  },
  {
    name: 'adamw f32 2^24+3 step 5 clip',
    op: 'adamw',
    args: {
      p: { shape: PARAM, dtype: 'f32' },
      g: { shape: PARAM, dtype: 'bf16' },
      m: { shape: PARAM, dtype: 'f32' },
      v: { shape: PARAM, dtype: 'f32', range: 'positive' },
      norm: { shape: [1], dtype: 'f32', range: 'positive' },
    },
    scalars: { lr: 1e-3, step: 5, weightDecay: 0.1, gradScale: 0.5, maxNorm: 0.1, skipNonFinite: true },
    rtol: 4 * epsilon('f32'),
    atol: 4 * epsilon('f32'),
  },
  {
    name: 'adamw_mixed bf16 2^24+3',
    op: 'adamw_mixed',
    args: {
      p: { shape: PARAM, dtype: 'bf16' },
      g: { shape: PARAM, dtype: 'bf16' },
      m: { shape: PARAM, dtype: 'f32' },
      v: { shape: PARAM, dtype: 'f32', range: 'positive' },
      master: { shape: PARAM, dtype: 'f32' },
      norm: { shape: [1], dtype: 'f32', range: 'positive' },
    },
    scalars: { lr: 1e-3, step: 2 },
    rtol: epsilon('bf16'),
    atol: 4 * epsilon('f32'),
  },
  {
    name: 'sgd f16 nesterov 2^24+3',
    op: 'sgd',
    args: {
      p: { shape: PARAM, dtype: 'f16' },
      g: { shape: PARAM, dtype: 'f16' },
      buf: { shape: PARAM, dtype: 'f16' },
      norm: { shape: [1], dtype: 'f32', range: 'positive' },
    },
    scalars: { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 1e-3 },
    rtol: 2 * epsilon('f16'),
    atol: 4 * epsilon('f16'),
  },
];

void describe('cuda optim at scale', { skip: device ? false : reason }, () => {
  for (const c of CASES) {
    void it(c.name, async () => {
      assert.deepEqual(await runCudaCase(device!, c), []);
    });
  }
});
