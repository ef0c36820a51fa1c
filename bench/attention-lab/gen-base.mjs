// Writes the lab's baselines from the built kernels (dist/): common.cuh (the shared device helpers of
// src/kernels/attention/cuda-mma-common.ts), fwd0.cu, dkdv0.cu, dq0.cu (the kernels Tandem runs by default; with
// -DATTN_V1=1 its opt-in v1), fwd2.cu (its opt-in FA2-style forward, v3) and bwd2.cu (its opt-in
// single-pass backward, v2) and bwd3.cu (the same in halves, v4) — the lab's own variants stay
// hand-written beside them.
// Run from the repository root after `npm run build`: node bench/attention-lab/gen-base.mjs
import { writeFileSync } from 'node:fs';
const common = (await import('../../dist/src/kernels/attention/cuda-mma-common.js')).MMA_COMMON;
const m = await import('../../dist/src/kernels/attention/cuda-mma.js');
const two = await import('../../dist/src/kernels/attention_backward/cuda-mma-dkdv-dq.js');
const fa2 = await import('../../dist/src/kernels/attention/cuda-mma-fwd2.js');
const bwd = await import('../../dist/src/kernels/attention_backward/cuda-mma-bwd.js');
const halves = await import('../../dist/src/kernels/attention_backward/cuda-mma-bwd-halves.js');
const dir = new URL('.', import.meta.url).pathname;
writeFileSync(`${dir}common.cuh`, `#pragma once\n${common}`);
for (const [name, src] of [
  ['fwd0', m.MMA_FORWARD],
  ['dkdv0', two.MMA_DKDV],
  ['dq0', two.MMA_DQ],
  ['fwd2', fa2.MMA_FORWARD_FA2],
  ['bwd2', bwd.MMA_BWD_SINGLE_PASS],
  // The halves kernel with the single pass's prep and convert, so the file stands alone as bwd2.cu does.
  ['bwd3', `${halves.MMA_BWD_HALVES}\n${bwd.MMA_SINGLE_PASS_AUX}`],
]) {
  if (!src.startsWith(common)) throw new Error(`${name}: does not start with the common helpers`);
  writeFileSync(`${dir}${name}.cu`, `#include "common.cuh"\n${src.slice(common.length)}`);
}
