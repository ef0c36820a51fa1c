/**
 * The custom-kernel job type on a real runtime: a WGSL kernel through Dawn (llvmpipe here, any GPU
 * elsewhere) computes y = 2x + p0 and the job returns the written tensor's summary; bad WGSL fails with
 * the compiler's message; a CUDA kernel without a CUDA device fails with the backend's reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTandemError } from '../../src/core/errors.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { JobContext } from '../../src/service/jobs/job-type.js';
import { customKernelJob } from '../../src/service/jobs/types/custom-kernel.js';

const rt = await Runtime.create({
  backends: ['cpu', 'webgpu', 'cuda'],
  calibrate: false,
  log: () => undefined,
});
const hasWebGpu = rt.devices.some((d) => d.info.kind === 'webgpu');
const hasCuda = rt.devices.some((d) => d.info.kind === 'cuda');

function ctx(raw: Record<string, unknown>): JobContext<unknown> {
  return {
    jobId: 'j1',
    tenantId: 't1',
    attempt: 1,
    params: customKernelJob.parse(raw),
    signal: new AbortController().signal,
    rt,
    placement: { device: undefined, reason: 'test' },
    tags: { job: 'j1' },
    progress: () => undefined,
    span: () => undefined,
  };
}

const WGSL = `
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
struct P { p0: f32 }
@group(0) @binding(2) var<uniform> u: P;
@compute @workgroup_size(64)
fn twice(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&y)) { y[id.x] = 2.0 * x[id.x] + u.p0; }
}`;

test(
  'custom-kernel: a WGSL kernel runs as a job and its output comes back',
  { skip: hasWebGpu ? false : 'no WebGPU device here' },
  async () => {
    const n = 1000;
    const raw = {
      language: 'wgsl',
      source: WGSL,
      entry: 'twice',
      tensors: [
        { name: 'x', shape: [n], dtype: 'f32', mode: 'r', init: 'range' },
        { name: 'y', shape: [n], dtype: 'f32', mode: 'w' },
      ],
      params: [{ type: 'f32', value: 0.5 }],
      grid: [Math.ceil(n / 64)],
    };
    const result = (await customKernelJob.run(ctx(raw))) as {
      device: string;
      outputs: Record<string, { sum: number; first: number[] }>;
    };
    assert.equal(result.device, 'webgpu0');
    const y = result.outputs['y']!;
    assert.deepEqual(y.first.slice(0, 4), [0.5, 2.5, 4.5, 6.5]);
    assert.equal(y.sum, 2 * ((n * (n - 1)) / 2) + 0.5 * n);
  },
);

test(
  'custom-kernel: WGSL that does not compile fails with the compiler message',
  { skip: hasWebGpu ? false : 'no WebGPU device here' },
  async () => {
    const raw = {
      language: 'wgsl',
      source: '@compute @workgroup_size(1) fn broken() { let a: f32 = ; }',
      entry: 'broken',
      tensors: [{ name: 'y', shape: [4], dtype: 'f32', mode: 'w' }],
      grid: [1],
    };
    await assert.rejects(customKernelJob.run(ctx(raw)), (e: unknown) =>
      isTandemError(e, 'TANDEM_ERR_COMPILE'),
    );
  },
);

test('custom-kernel: bad requests are refused before anything runs', () => {
  const base = { language: 'wgsl', source: WGSL, entry: 'twice', grid: [1] };
  assert.throws(
    () => customKernelJob.parse({ ...base, tensors: [{ name: 'x', shape: [4], dtype: 'f32', mode: 'r' }] }),
    /at least one tensor must be written/,
  );
  assert.throws(
    () =>
      customKernelJob.parse({
        ...base,
        tensors: [
          { name: 'y', shape: [4], dtype: 'f32', mode: 'w' },
          { name: 'y', shape: [4], dtype: 'f32', mode: 'w' },
        ],
      }),
    /named twice/,
  );
  assert.throws(
    () =>
      customKernelJob.parse({
        ...base,
        tensors: [{ name: 'y', shape: [1 << 14, 1 << 14], dtype: 'f32', mode: 'w' }],
      }),
    (e: unknown) => isTandemError(e, 'TANDEM_ERR_LIMIT'),
  );
});

test(
  'custom-kernel: a CUDA kernel needs a CUDA device',
  { skip: hasCuda ? 'a CUDA device is present' : false },
  async () => {
    const raw = {
      language: 'cuda',
      source: 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }',
      entry: 'k',
      tensors: [{ name: 'y', shape: [32], dtype: 'f32', mode: 'w' }],
      params: [{ tensor: 'y' }],
      grid: [1],
      block: [32],
    };
    await assert.rejects(
      customKernelJob.run(ctx(raw)),
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_NO_DEVICE') && /cuda/.test((e as Error).message),
    );
  },
);

test('custom-kernel: close the runtime', async () => {
  await rt.close();
});
