/**
 * A "cuda" backend over the fake driver (test/cuda/fake-driver.ts): one device, cuda0, whose faults
 * the test injects (`gpu.faultCode = 700`) and whose recovery it can refuse (`gpu.refuseRecovery`, what
 * the H200's driver does after an illegal address). Tasks without tensors (noop) need no copy routes.
 */
import type { Backend } from '../../src/devices/device.js';
import { FakeGpu } from '../cuda/fake-driver.js';

export function fakeGpuBackend(gpu: FakeGpu = new FakeGpu()): { gpu: FakeGpu; backend: Backend } {
  const backend: Backend = {
    kind: 'cuda',
    open: () => Promise.resolve({ kind: 'cuda', available: true, devices: [gpu.device()], copies: [] }),
  };
  return { gpu, backend };
}
