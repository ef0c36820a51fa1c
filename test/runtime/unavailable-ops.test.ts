/**
 * A device can list ops its kind implements that it cannot run (`Device.unavailableOps`): a CUDA device
 * opened without libcusolver lists potrf. The scheduler then places potrf elsewhere, a potrf pinned to
 * that device is refused as having no device, and the device's other ops are unaffected. The GPU here is
 * test/cuda/fake-driver.ts's CudaDevice, opened (as on a machine without cuSOLVER) with no solver.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { fakeGpuBackend } from './fake-gpu-backend.js';
import { cpuRuntime, randomValues } from './helpers.js';

/** A symmetric positive-definite n×n matrix: B·Bᵀ + n·I from random B. */
function spd(n: number, seed: number): Float64Array {
  const b = randomValues(n * n, seed);
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      let s = i === j ? n : 0;
      for (let k = 0; k < n; k++) s += b[i * n + k]! * b[j * n + k]!;
      a[i * n + j] = s;
    }
  return a;
}

void describe('ops a device lists as unavailable', () => {
  void it('places potrf on the CPU when the CUDA device has no cuSOLVER, and refuses it pinned to the GPU', async () => {
    const { gpu, backend } = fakeGpuBackend();
    const rt = await cpuRuntime({ backends: ['cpu', backend] });
    try {
      const dev = gpu.device();
      assert.ok(dev.unavailableOps?.has('potrf'), 'a CUDA device without cuSOLVER lists potrf');
      const n = 12;
      const a0 = spd(n, 7);
      const a = rt.tensor([n, n], 'f64', Float64Array.from(a0));
      assert.equal(rt.canRun('potrf', { a }, {}, 'cuda'), false);
      assert.equal(rt.canRun('potrf', { a }, {}, 'cpu'), true);
      assert.equal(rt.canRun('noop', {}, {}, 'cuda'), true, "the device's other ops stay eligible");
      for (let i = 0; i < 4; i++) {
        const t = rt.submit({
          kernel: 'potrf',
          args: { a: rt.tensor([n, n], 'f64', Float64Array.from(a0)) },
        });
        await t.done;
        assert.equal(t.deviceId, 'cpu0');
      }
      const t = rt.submit({ kernel: 'potrf', args: { a } });
      await t.done;
      // L·Lᵀ = A on the lower triangle, against float64.
      const l = (await rt.read(a)) as Float64Array;
      for (let i = 0; i < n; i++)
        for (let j = 0; j <= i; j++) {
          let s = 0;
          for (let k = 0; k <= j; k++) s += l[i * n + k]! * l[j * n + k]!;
          assert.ok(Math.abs(s - a0[i * n + j]!) <= 1e-9 * Math.abs(a0[i * n + j]!) + 1e-9, `(${i},${j})`);
        }
      await assert.rejects(
        rt.submit({
          kernel: 'potrf',
          args: { a: rt.tensor([n, n], 'f64', Float64Array.from(a0)) },
          device: 'cuda',
        }).done,
        (e: unknown) => isTandemError(e, 'TANDEM_ERR_NO_DEVICE'),
      );
      // Other kernels still go to the GPU when pinned there.
      const onGpu = rt.submit({ kernel: 'noop', device: 'cuda' });
      await onGpu.done;
      assert.equal(onGpu.deviceId, 'cuda0');
    } finally {
      await rt.close();
    }
  });
});
