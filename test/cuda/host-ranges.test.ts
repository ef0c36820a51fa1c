/**
 * A page-locked SAB that V8 collected keeps its range registered until its finaliser runs, and the
 * pages can meanwhile become the driver's next address reservation: on an H100 a cuMemAlloc failed with
 * CUDA_ERROR_ALREADY_MAPPED right after a large host allocation set off a GC. The memory node then
 * unregisters the dead ranges and allocates again. Fake driver; a GC forced between the two.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { HostBuffer } from '../../src/devices/device.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { CUDA_ERROR_ALREADY_MAPPED } from '../../src/devices/cuda/ffi/driver.js';
import { FakeGpu } from './fake-driver.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const BYTES = 2 << 20; // above the size from which uploads page-lock the SAB in place

function tick(): Promise<void> {
  return new Promise((res) => setImmediate(res));
}

/** Uploads from a SAB nobody keeps, so it can be collected afterwards. */
async function uploadTemporary(dev: CudaDevice): Promise<void> {
  const host = { sab: new SharedArrayBuffer(BYTES) } as unknown as HostBuffer;
  new Uint8Array(host.sab).fill(7);
  const dst = dev.node.alloc(BYTES);
  const err = await new Promise<Error | null>((res) => dev.upload(host, dst, BYTES, res));
  assert.equal(err, null);
}

function setup(): { gpu: FakeGpu; dev: CudaDevice; registered: number[]; unregistered: number[] } {
  const gpu = new FakeGpu();
  const registered: number[] = [];
  const unregistered: number[] = [];
  gpu.api.cuMemHostRegister_v2 = (addr) => {
    registered.push(addr);
    return 0;
  };
  gpu.api.cuMemHostUnregister = (addr) => {
    unregistered.push(addr);
    return 0;
  };
  return { gpu, dev: gpu.device(true), registered, unregistered };
}

/** Forces collection of the temporary SABs; returns with their finalisers not yet run. */
async function collect(unregistered: number[]): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await tick();
    gc();
  }
  // Finalisers run as tasks after the GC; clear what already ran so the test sees only the node's work.
  unregistered.length = 0;
}

void describe('dead page-locked ranges and device allocations', () => {
  void it('cuMemAlloc finding an address mapped: the collected ranges are unregistered and it allocates again', async () => {
    const { gpu, dev, registered, unregistered } = setup();
    await uploadTemporary(dev);
    assert.equal(registered.length, 1, 'the 2 MiB upload page-locked its SAB');
    // Collect it, then fail the next allocation the way the driver did, in the same synchronous turn
    // as the GC (the finaliser cannot have run).
    for (let i = 0; i < 5; i++) await tick();
    let calls = 0;
    gpu.api.cuMemAlloc_v2 = (o) => {
      calls++;
      if (calls === 1) return CUDA_ERROR_ALREADY_MAPPED;
      o[0] = 0x7000_0000;
      return 0;
    };
    gc();
    unregistered.length = 0;
    const buf = dev.node.alloc(64 << 20);
    assert.equal(calls, 2, 'one failed allocation, one retry');
    assert.equal(buf.ptr, 0x7000_0000);
    assert.deepEqual(unregistered, registered, 'the dead range was unregistered before the retry');
  });

  void it('with no dead range to drop, the driver error surfaces with its code (no retry loop)', async () => {
    const { gpu, dev, registered, unregistered } = setup();
    const live = { sab: new SharedArrayBuffer(BYTES) } as unknown as HostBuffer;
    const dst = dev.node.alloc(BYTES);
    assert.equal(await new Promise<Error | null>((res) => dev.upload(live, dst, BYTES, res)), null);
    assert.equal(registered.length, 1);
    await collect(unregistered);
    let calls = 0;
    gpu.api.cuMemAlloc_v2 = () => {
      calls++;
      return CUDA_ERROR_ALREADY_MAPPED;
    };
    assert.throws(
      () => dev.node.alloc(64 << 20),
      (e: Error & { code?: string }) => e.code === 'TANDEM_ERR_DRIVER' && /cuMemAlloc_v2/.test(e.message),
    );
    assert.equal(calls, 1);
    assert.deepEqual(unregistered, [], 'the live SAB stays page-locked');
    assert.equal(new Uint8Array(live.sab).length, BYTES); // keeps `live` reachable to here
  });
});
