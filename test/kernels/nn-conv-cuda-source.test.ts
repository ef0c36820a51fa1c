/**
 * The conv group's CUDA programs compile for sm_90 in every dtype binding, checked here with nvcc
 * (the same prelude and defines NVRTC gets; --ptx, no GPU needed), so a syntax or type error shows
 * before the H200 run. Skips with the reason when nvcc is absent. Whether they compute the right
 * thing is test/gpu/cuda-conformance.test.ts's job, on the GPU.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defineLines, prelude } from '../../src/devices/cuda/prelude.js';
import { COL2IM } from '../../src/kernels/conv2d/cuda-programs.js';
import { POOL_CUDA_SOURCE } from '../../src/kernels/pool2d/cuda.js';
import { nvccUnavailable } from './nvcc.js';

const skip = nvccUnavailable();
if (skip) console.log(`# skip: ${skip}`);
const dir = mkdtempSync(join(tmpdir(), 'tandem-conv-cu-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SOURCES: readonly { name: string; source: string; defines: Record<string, number> }[] = [
  { name: 'conv (im2col, col2im, layout, db, dw)', source: COL2IM.source, defines: {} },
  { name: 'pool max', source: POOL_CUDA_SOURCE, defines: { OP: 0 } },
  { name: 'pool avg', source: POOL_CUDA_SOURCE, defines: { OP: 1 } },
];

void describe('conv group CUDA sources compile with nvcc (sm_90)', { skip }, () => {
  for (const { name, source, defines } of SOURCES) {
    for (const dtype of ['f32', 'f64', 'f16', 'bf16'] as const) {
      void it(`${name} ${dtype}`, () => {
        const file = join(dir, `${name.split(' ')[0]}-${defines.OP ?? 'x'}-${dtype}.cu`);
        writeFileSync(file, prelude({ X: dtype }) + defineLines(defines) + source);
        const r = spawnSync(
          'nvcc',
          ['--ptx', '-arch=sm_90', '-std=c++17', '-diag-suppress=177', file, '-o', `${file}.ptx`],
          {
            encoding: 'utf8',
          },
        );
        assert.equal(r.status, 0, r.stderr);
        assert.doesNotMatch(r.stderr, /warning/i);
      });
    }
  }
});
