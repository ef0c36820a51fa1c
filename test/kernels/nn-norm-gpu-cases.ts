/**
 * Cases at model sizes for the norm group's GPU paths (test/gpu/nn-norm-cuda.test.ts runs them on
 * CUDA; test/kernels/nn-norm.test.ts runs them on the CPU here, so the cases themselves are known good
 * before the GPU sees them). Tolerances follow src/kernels/nn/norm-cases.ts.
 */
import { epsilon } from '../../src/core/dtype.js';
import type { ConformanceCase } from '../../src/kernels/conformance-cases.js';

const f32 = epsilon('f32');

export const NN_NORM_GPU_CASES: readonly ConformanceCase[] = [
  {
    name: 'layernorm bf16 [64, 768] (vectors of 8, three per lane)',
    op: 'layernorm',
    args: {
      x: { shape: [64, 768], dtype: 'bf16' },
      w: { shape: [768], dtype: 'bf16' },
      b: { shape: [768], dtype: 'bf16' },
      y: { shape: [64, 768], dtype: 'bf16' },
      mean: { shape: [64], dtype: 'f32' },
      rstd: { shape: [64], dtype: 'f32' },
    },
    scalars: {},
    rtol: 2 * epsilon('bf16') + 16 * f32,
    atol: 2 * 768 * f32,
  },
  {
    name: 'layernorm_backward f32 [6, 1280] (rows too wide for register column sums: shared atomics)',
    op: 'layernorm_backward',
    args: {
      dy: { shape: [6, 1280], dtype: 'f32' },
      x: { shape: [6, 1280], dtype: 'f32' },
      w: { shape: [1280], dtype: 'f32' },
      mean: { shape: [6], dtype: 'f32' },
      rstd: { shape: [6], dtype: 'f32', range: 'positive' },
      dx: { shape: [6, 1280], dtype: 'f32' },
      dw: { shape: [1280], dtype: 'f32' },
      db: { shape: [1280], dtype: 'f32' },
    },
    scalars: { accumulate: false, accumulateDx: false },
    rtol: 64 * f32,
    atol: 16 * (1280 + 6) * f32,
  },
  {
    name: 'layernorm_backward f32 [300, 768] accumulate (38 blocks of column partials)',
    op: 'layernorm_backward',
    args: {
      dy: { shape: [300, 768], dtype: 'f32' },
      x: { shape: [300, 768], dtype: 'f32' },
      w: { shape: [768], dtype: 'f32' },
      mean: { shape: [300], dtype: 'f32' },
      rstd: { shape: [300], dtype: 'f32', range: 'positive' },
      dx: { shape: [300, 768], dtype: 'f32' },
      dw: { shape: [768], dtype: 'f32' },
      db: { shape: [768], dtype: 'f32' },
    },
    scalars: { accumulate: true, accumulateDx: true },
    rtol: 64 * f32,
    atol: 16 * (768 + 300) * f32,
  },
  {
    name: 'softmax_xent bf16 [6, 50304] V 50257 (1024-thread blocks, vectors of 8)',
    op: 'softmax_xent',
    args: {
      logits: { shape: [6, 50304], dtype: 'bf16' },
      targets: { shape: [6], dtype: 'i32', range: 'index', min: -1, max: 50257 },
      losses: { shape: [6], dtype: 'f32' },
    },
    scalars: { vocab: 50257, gradScale: 0.125 },
    rtol: 2 * epsilon('bf16') + 64 * f32,
    atol: 16 * f32,
  },
  {
    name: 'embedding_backward bf16 B8 T64 C96 V5 (every id repeated ~100 times)',
    op: 'embedding_backward',
    args: {
      ids: { shape: [8, 64], dtype: 'i32', range: 'index', max: 5 },
      dy: { shape: [8, 64, 96], dtype: 'bf16' },
      dwte: { shape: [5, 96], dtype: 'bf16' },
      dwpe: { shape: [70, 96], dtype: 'bf16' },
    },
    scalars: { accumulate: true },
    rtol: 2 * epsilon('bf16') + 16 * f32,
    atol: 4 * 8 * 64 * f32,
  },
  {
    name: 'dropout f16 [1048583] offset 13 seed 2^45 + 1',
    op: 'dropout',
    args: { x: { shape: [1048583], dtype: 'f16' }, y: { shape: [1048583], dtype: 'f16' } },
    scalars: { p: 0.1, seed: 2 ** 45 + 1, offset: 13 },
    rtol: 2 * epsilon('f16'),
    atol: 0,
  },
];
