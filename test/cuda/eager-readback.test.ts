/**
 * Eager read-back on a fake driver: a program that declares `readback` has its small output copied to
 * pinned memory under its own completion event, so the download that follows needs no GPU round trip;
 * a later write to the buffer drops the copy (the download then goes to the GPU as usual). One device
 * per process (the feature is off with several), hence a file of its own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HostBuffer } from '../../src/devices/device.js';
import { mcScalars } from '../../src/kernels/mc_common/def.js';
import { mcSpec } from '../../src/kernels/mc_common/engine.js';
import { KERNEL_IMPLS } from '../../src/kernels/register.js';
import { FakeGpu } from './fake-driver.js';

const impl = (op: string): unknown => KERNEL_IMPLS.find((e) => e.op === op && e.backend === 'cuda')!.impl;

void describe('eager read-back', () => {
  void it('serves the download after a readback program from pinned memory, once, and not after a rewrite', async () => {
    const gpu = new FakeGpu();
    const copies: number[] = [];
    gpu.api.cuMemcpyAsync = (_dst, _src, bytes) => {
      copies.push(bytes);
      return 0;
    };
    const dev = gpu.device();
    const desc = { shape: [4, 3], dtype: 'f32' as const, bytes: 48 };
    const buf = dev.node.alloc(48);
    const spec = mcSpec({
      kind: 'european',
      right: 'call',
      spot: 100,
      strike: 100,
      rate: 0.05,
      vol: 0.2,
      maturity: 1,
      dividend: 0,
      steps: 1,
      paths: 1000,
      antithetic: false,
      seed: 1,
    });
    const run = (op: string, scalars: Record<string, number | boolean>): Promise<Error | null> =>
      new Promise((res) =>
        dev.queues[0]!.launch(
          { taskId: 1, op, impl: impl(op), args: [{ buffer: buf, desc }], scalars, after: [] },
          res,
        ),
      );
    const host = { sab: new SharedArrayBuffer(48) } as unknown as HostBuffer;
    const download = (): Promise<Error | null> => new Promise((res) => dev.download(buf, host, 48, res));

    assert.equal(await run('mc_european', mcScalars(spec, 0, 250)), null);
    assert.deepEqual(copies, [48]); // the eager copy, enqueued with the kernel
    assert.equal(await download(), null);
    assert.equal(dev.transfers.stats.eagerHits, 1);
    assert.deepEqual(copies, [48]); // no second copy
    // Used once: a second download goes to the GPU.
    assert.equal(await download(), null);
    assert.equal(dev.transfers.stats.eagerHits, 1);
    assert.equal(copies.length, 2);
    // A later kernel writing the buffer makes the eager copy stale.
    assert.equal(await run('mc_european', mcScalars(spec, 0, 250)), null);
    assert.equal(await run('scale', { alpha: 2 }), null);
    assert.equal(await download(), null);
    assert.equal(dev.transfers.stats.eagerHits, 1);
    await dev.close();
  });
});
