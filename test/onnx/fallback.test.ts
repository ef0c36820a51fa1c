/**
 * KernelPlacement (onnx/fallback.ts) on a real CPU runtime: kernels go to the run's device when it can
 * run them, to the fallback otherwise; a device or fallback that cannot run a kernel is
 * TANDEM_ERR_UNSUPPORTED naming the node, the kernel and the devices.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TandemError } from '../../src/core/errors.js';
import { KernelPlacement } from '../../src/onnx/fallback.js';
import { Runtime } from '../../src/runtime/runtime.js';

void describe('onnx kernel placement and fallback', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  it('runs on the device when it can; refuses, naming the node, when neither device nor fallback can', () => {
    const x = rt.tensor([4], 'f32');
    const y = rt.tensor([4], 'f32');
    const args = { x, y };
    const scalars = { op: 'relu' };
    assert.equal(rt.canRun('onnx_unary', args, scalars, 'cpu'), true);
    assert.equal(rt.canRun('onnx_unary', args, scalars, 'webgpu'), false, 'no webgpu device is open');
    assert.equal(rt.canRun('onnx_unary', { x }, scalars, 'cpu'), false, 'an argument is missing');
    assert.equal(
      new KernelPlacement(rt, 'cpu', null).deviceFor('onnx_unary', args, scalars, 'Relu:r'),
      'cpu',
    );
    assert.equal(
      new KernelPlacement(rt, undefined, null).deviceFor('onnx_unary', args, scalars, 'Relu:r'),
      undefined,
    );

    const toCpu = new KernelPlacement(rt, 'webgpu', 'cpu');
    assert.equal(toCpu.deviceFor('onnx_unary', args, scalars, 'Relu:r'), 'cpu');
    assert.deepEqual([...toCpu.fellBack], ['Relu:r']);

    const strict = new KernelPlacement(rt, 'webgpu', null);
    assert.throws(
      () => strict.deviceFor('onnx_unary', args, scalars, 'Relu:r'),
      (e: unknown) =>
        e instanceof TandemError &&
        e.code === 'TANDEM_ERR_UNSUPPORTED' &&
        /node Relu:r needs kernel onnx_unary on f32, which webgpu cannot run \(no fallback device\)/.test(
          e.message,
        ),
    );
    // Several fallbacks: the first that can run it (no cuda device is open here).
    assert.equal(
      new KernelPlacement(rt, 'webgpu', ['cuda', 'cpu']).deviceFor('onnx_unary', args, scalars, 'Relu:r'),
      'cpu',
    );
    const nowhere = new KernelPlacement(rt, 'webgpu', 'cuda');
    assert.throws(
      () => nowhere.deviceFor('onnx_unary', args, scalars, 'Relu:r'),
      (e: unknown) => e instanceof TandemError && /neither can the fallback cuda/.test(e.message),
    );
    rt.free(x);
    rt.free(y);
  });
});
