/**
 * The conv group's CUDA implementations executed on the host emulator (cuda-emu/: the real program
 * text, prelude, launch geometry and parameters, one host thread per CUDA thread, ctx.gemm as a
 * row-major float64-sum GEMM) against the float64 references, through the shared conformance cases:
 * index arithmetic, the f16/bf16 conversions, the block reduction for db and the accumulate paths are
 * checked here without a GPU. The GPU itself is test/gpu/cuda-conformance.test.ts's and
 * test/gpu/nn-conv-cnn.test.ts's job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { conv2dCudaWith } from '../../src/kernels/conv2d/cuda.js';
import { conv2dBackwardCudaWith } from '../../src/kernels/conv2d_backward/cuda.js';
import { hostCudaUnavailable } from './cuda-emu/host-cuda.js';
import { runCaseOnEmulator } from './cuda-emu/run-case.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip conv CUDA emulation: ${unavailable}`);

/**
 * Odd sizes, stride 2 with padding 2, a 3x5 kernel, both accumulate modes, overlapping and padded pool
 * windows; f32, and bf16 / f16 for the 16-bit paths (each dtype's programs compile once: that, not
 * running them, is most of this test's minute or two).
 */
const PICKED = [
  /^conv2d (f32|bf16) n3 c2 11x8 o4 k5x5 s2 p2$/,
  /^conv2d_backward (f32|bf16) n3 c2 11x8 o4 k5x5 s2 p2 accumulate$/,
  /^conv2d_backward f32 n2 c3 5x7 o2 k3x5 s1 p2$/,
  /^pool2d(_backward)? (max|avg) f32 n1 c4 7x9 k3 s2 p1$/,
  /^pool2d(_backward)? (max|avg) f16 n2 c2 6x5 k3 s1 p1$/,
];
const cases = CONFORMANCE_CASES.filter((c) => PICKED.some((p) => p.test(c.name)));

void describe('conv group CUDA kernels on the host emulator', { skip: unavailable ?? false }, () => {
  void it('picks the cases it means to run', () => assert.equal(cases.length, 2 + 2 + 1 + 4 + 4));
  for (const c of cases) {
    void it(c.name, () => assert.deepEqual(runCaseOnEmulator(c), []));
  }
  // A 1-byte column budget: one image per chunk, so n0 > 0 offsets and dw's accumulation across chunks run.
  for (const [op, impl] of [
    ['conv2d', conv2dCudaWith(1)],
    ['conv2d_backward', conv2dBackwardCudaWith(1)],
  ] as const) {
    const c = cases.find((k) => k.op === op && k.name.includes('f32 n3'))!;
    void it(`${c.name}, one image per chunk`, () => assert.deepEqual(runCaseOnEmulator(c, { impl }), []));
  }
});
