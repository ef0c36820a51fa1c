/** The CUDA backend's logic on a fake driver: completion, fault reset and data-loss epochs, allocator policy. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { CachingAllocator, sizeClass } from '../../src/devices/cuda/allocator.js';
import { createCudaBackend } from '../../src/devices/cuda/backend.js';
import { KERNEL_IMPLS } from '../../src/kernels/register.js';
import { HostNode } from '../../src/memory/host-node.js';
import { FakeGpu } from './fake-driver.js';

const impl = (op: string): unknown => KERNEL_IMPLS.find((e) => e.op === op && e.backend === 'cuda')!.impl;
const desc = { shape: [256], dtype: 'f32' as const, bytes: 1024 };

void describe('cuda backend without a GPU', () => {
  void it('opens as unavailable with the paths it tried, quickly and without throwing', async (t) => {
    const t0 = performance.now();
    const st = await createCudaBackend().open({
      cacheDir: '/tmp',
      hostNode: new HostNode(),
      calibrate: false,
      options: {},
      log: () => {},
    });
    if (st.available) return t.skip('a GPU is present here');
    assert.equal(st.devices.length, 0);
    assert.match(st.reason ?? '', /libcuda|cuInit|no GPU/);
    assert.ok(performance.now() - t0 < 2000);
  });
});

void describe('caching allocator', () => {
  const raw = () => {
    const live = new Map<number, number>();
    let next = 256;
    let budget = 10 << 20;
    return {
      mem: {
        alloc: (bytes: number) => {
          if (bytes > budget) return null;
          budget -= bytes;
          live.set((next += bytes), bytes);
          return next;
        },
        free: (p: number) => {
          budget += live.get(p) ?? 0;
          live.delete(p);
        },
        info: () => ({ free: budget, total: 10 << 20 }),
      },
    };
  };
  void it('rounds small requests to 512 B and large ones to 2 MiB', () => {
    assert.equal(sizeClass(1), 512);
    assert.equal(sizeClass(513), 1024);
    assert.equal(sizeClass((1 << 20) + 1), 2 << 20);
  });
  void it('reuses a freed block, trims the cache on pressure, then fails with requested/free/total', () => {
    const r = raw();
    const a = new CachingAllocator(r.mem, 'cuda0');
    const x = a.alloc(4 << 20);
    a.release(x.ptr, x.size);
    assert.equal(a.alloc(3 << 20 /* same 4 MiB class */).ptr, x.ptr);
    const y = a.alloc(4 << 20);
    a.release(y.ptr, y.size);
    // 10 MiB budget: 8 MiB reserved (4 in use + 4 cached); 4 more only fit after the cache is trimmed.
    const z = a.alloc(4 << 20);
    assert.equal(a.stats.trims, 0);
    a.release(z.ptr, z.size);
    const big = a.alloc(6 << 20);
    assert.equal(a.stats.trims, 1);
    assert.ok(big.ptr > 0);
    assert.throws(
      () => a.alloc(64 << 20),
      (e: unknown) =>
        isTandemError(e, 'TANDEM_ERR_OUT_OF_MEMORY') &&
        e.details['requested'] === 64 << 20 &&
        e.details['total'] === 10 << 20,
    );
  });
});

void describe('cuda device logic on a fake driver', () => {
  void it('completes launches through event polling', async () => {
    const gpu = new FakeGpu();
    const dev = gpu.device();
    const buf = dev.node.alloc(1024);
    gpu.autoComplete = false;
    let done = 0;
    for (let i = 0; i < 5; i++)
      dev.queues[0]!.launch(
        {
          taskId: i,
          op: 'scale',
          impl: impl('scale'),
          args: [{ buffer: buf, desc }],
          scalars: { alpha: 2 },
          after: [],
        },
        () => done++,
      );
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(done, 0);
    gpu.complete();
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(done, 5);
    assert.equal(gpu.launches, 5);
  });

  void it('turns a fault into DEVICE_FAULT, resets, marks older buffers lost and runs later work', async () => {
    const gpu = new FakeGpu();
    const dev = gpu.device();
    const old = dev.node.alloc(1024);
    const reasons: string[] = [];
    dev.onMemoryLost((r) => reasons.push(r));
    gpu.faultCode = 700;
    const failed = new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        {
          taskId: 1,
          op: 'scale',
          impl: impl('scale'),
          args: [{ buffer: old, desc }],
          scalars: { alpha: 2 },
          after: [],
        },
        res,
      ),
    );
    const err = await failed;
    assert.ok(isTandemError(err, 'TANDEM_ERR_DEVICE_FAULT'), String(err));
    assert.match(err.message, /CUDA_ERROR_ILLEGAL_ADDRESS/);
    assert.equal(gpu.resets, 1);
    assert.equal(reasons.length, 1);
    assert.ok(dev.node.isLost(old));
    const lost = await new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        {
          taskId: 2,
          op: 'scale',
          impl: impl('scale'),
          args: [{ buffer: old, desc }],
          scalars: { alpha: 2 },
          after: [],
        },
        res,
      ),
    );
    assert.ok(isTandemError(lost, 'TANDEM_ERR_DATA_LOST'));
    const dependent = await new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        { taskId: 3, op: 'noop', impl: impl('noop'), args: [], scalars: {}, after: [1] },
        res,
      ),
    );
    assert.ok(isTandemError(dependent, 'TANDEM_ERR_DEPENDENCY_FAILED'));
    const fresh = dev.node.alloc(1024);
    const ok = await new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        {
          taskId: 4,
          op: 'scale',
          impl: impl('scale'),
          args: [{ buffer: fresh, desc }],
          scalars: { alpha: 2 },
          after: [],
        },
        res,
      ),
    );
    assert.equal(ok, null);
  });

  void it('when the driver refuses a new context after a fault, refuses later work with clear errors', async () => {
    const gpu = new FakeGpu();
    gpu.refuseRecovery = true;
    const dev = gpu.device();
    const old = dev.node.alloc(1024);
    gpu.faultCode = 700;
    const err = await new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        {
          taskId: 1,
          op: 'scale',
          impl: impl('scale'),
          args: [{ buffer: old, desc }],
          scalars: { alpha: 2 },
          after: [],
        },
        res,
      ),
    );
    assert.ok(isTandemError(err, 'TANDEM_ERR_DEVICE_FAULT'));
    assert.match(String(err.details['resetError']), /cuCtxCreate_v4 failed/);
    assert.ok(dev.node.isLost(old));
    assert.throws(
      () => dev.node.alloc(64),
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_DEVICE_UNAVAILABLE'),
    );
    const lost = await new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        {
          taskId: 2,
          op: 'scale',
          impl: impl('scale'),
          args: [{ buffer: old, desc }],
          scalars: { alpha: 2 },
          after: [],
        },
        res,
      ),
    );
    assert.ok(isTandemError(lost, 'TANDEM_ERR_DATA_LOST'));
    const closed = await new Promise<Error | null>((res) =>
      dev.queues[0]!.launch(
        { taskId: 3, op: 'noop', impl: impl('noop'), args: [], scalars: {}, after: [] },
        res,
      ),
    );
    assert.ok(
      isTandemError(closed, 'TANDEM_ERR_CLOSED') && /refused a new context/.test(closed.message),
      String(closed),
    );
  });
});
