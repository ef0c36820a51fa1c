/**
 * Runtime.onDeviceLost on a fake GPU: a fault the driver cannot recover from (the H200's sticky
 * illegal address) reports the device lost once, before its tasks fail, and routes new work away from
 * it; a fault the device recovers from reports nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { DeviceLoss } from '../../src/runtime/runtime.js';
import { fakeGpuBackend } from './fake-gpu-backend.js';
import { cpuRuntime } from './helpers.js';

void describe('device loss', () => {
  void it('reports a device the driver will not give back, once, before its tasks fail', async () => {
    const { gpu, backend } = fakeGpuBackend();
    const rt = await cpuRuntime({ backends: ['cpu', backend] });
    try {
      const losses: { loss: DeviceLoss; settledBefore: boolean }[] = [];
      let settled = false;
      rt.onDeviceLost((loss) => losses.push({ loss, settledBefore: settled }));
      gpu.refuseRecovery = true;
      gpu.faultCode = 700;
      const faulting = rt.submit({ kernel: 'noop', device: 'cuda' });
      await assert.rejects(
        faulting.done.finally(() => (settled = true)),
        (e: unknown) => isTandemError(e, 'TANDEM_ERR_DEVICE_FAULT'),
      );
      assert.equal(losses.length, 1);
      assert.equal(losses[0]!.loss.device, 'cuda0');
      assert.equal(losses[0]!.loss.kind, 'cuda');
      assert.match(losses[0]!.loss.reason, /refused a new context/);
      assert.equal(losses[0]!.settledBefore, false, 'the listener runs before the task fails');
      assert.deepEqual(
        rt.lostDevices.map((l) => l.device),
        ['cuda0'],
      );
      // New work goes elsewhere: a task pinned to the lost GPU has nowhere to run, others use the CPU.
      await assert.rejects(rt.submit({ kernel: 'noop', device: 'cuda' }).done, (e: unknown) =>
        isTandemError(e, 'TANDEM_ERR_NO_DEVICE'),
      );
      for (let i = 0; i < 8; i++) {
        const t = rt.submit({ kernel: 'noop' });
        await t.done;
        assert.equal(t.deviceId, 'cpu0');
      }
      assert.equal(losses.length, 1, 'reported once');
    } finally {
      await rt.close();
    }
  });

  void it('reports nothing when the device recovers from the fault', async () => {
    const { gpu, backend } = fakeGpuBackend();
    const rt = await cpuRuntime({ backends: [backend] });
    try {
      let lost = 0;
      rt.onDeviceLost(() => lost++);
      gpu.faultCode = 700;
      await assert.rejects(rt.submit({ kernel: 'noop', device: 'cuda' }).done, (e: unknown) =>
        isTandemError(e, 'TANDEM_ERR_DEVICE_FAULT'),
      );
      await rt.submit({ kernel: 'noop', device: 'cuda' }).done;
      assert.equal(lost, 0);
      assert.deepEqual(rt.lostDevices, []);
    } finally {
      await rt.close();
    }
  });
});
