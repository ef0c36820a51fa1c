// Writes the lab's baseline from the built kernels (dist/): common.cuh (the shared device helpers of
// src/kernels/attention/cuda-mma.ts) and fwd0.cu, dkdv0.cu, dq0.cu (the kernels Tandem runs today).
// Run from the repository root after `npm run build`: node bench/attention-lab/gen-base.mjs
import { writeFileSync } from 'node:fs';
const m = await import('../../dist/src/kernels/attention/cuda-mma.js');
const dir = new URL('.', import.meta.url).pathname;
const common = m.MMA_FORWARD.slice(0, m.MMA_FORWARD.indexOf('#define FQ'));
writeFileSync(`${dir}common.cuh`, `#pragma once\n${common}`);
for (const [name, src] of [
  ['fwd0', m.MMA_FORWARD],
  ['dkdv0', m.MMA_DKDV],
  ['dq0', m.MMA_DQ],
])
  writeFileSync(`${dir}${name}.cu`, `#include "common.cuh"\n${src.slice(common.length)}`);
