/**
 * WebGPU device behaviour beyond op results: discovery and its failure reasons, limits, compile errors,
 * custom WGSL, pooling, launch ordering and dependency failure, event-loop responsiveness, calibration.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { LaunchArg, TensorDesc } from '../../src/devices/device.js';
import { WebGpuBackend } from '../../src/devices/webgpu/backend.js';
import type { WgslCustomKernel } from '../../src/devices/webgpu/kernel-api.js';
import type { WebGpuDevice } from '../../src/devices/webgpu/webgpu-device.js';
import { axpyWebGpu } from '../../src/kernels/axpy/webgpu.js';
import { fillWebGpu } from '../../src/kernels/fill/webgpu.js';
import { gemmWebGpu } from '../../src/kernels/gemm/webgpu.js';
import { noopWebGpu } from '../../src/kernels/noop/webgpu.js';
import { scaleWebGpu } from '../../src/kernels/scale/webgpu.js';
import { HostNode } from '../../src/memory/host-node.js';
import { type Opened, copyAsync, launchAsync, openWebGpu, runOnDevice } from './harness.js';

const opened = await openWebGpu();
if (!opened.ok) console.log(`# webgpu device tests skipped: ${opened.reason}`);
const skip = opened.ok ? false : opened.reason;

function ctx(cacheDir: string, calibrate: boolean, options: Record<string, unknown>) {
  return {
    cacheDir,
    hostNode: new HostNode(),
    calibrate,
    options: { webgpu: options },
    log: () => undefined,
  };
}

const f32 = (n: number): TensorDesc => ({ shape: [n], dtype: 'f32', bytes: 4 * n });

function randomF32(n: number): Float32Array {
  return Float32Array.from({ length: n }, () => 0.25 + Math.random());
}

void describe('webgpu discovery', () => {
  void it('reports a backend with no adapter as unavailable, with what it tried, without throwing', async () => {
    const t0 = performance.now();
    const status = await new WebGpuBackend().open(ctx(tmpdir(), false, { backends: ['metal'] }));
    assert.equal(status.available, false);
    assert.match(status.reason ?? '', /metal/);
    assert.equal(status.devices.length, 0);
    assert.ok(performance.now() - t0 < 10_000, 'answers quickly');
  });

  void it('turns invalid options into an unavailable status naming the option', async () => {
    const status = await new WebGpuBackend().open(ctx(tmpdir(), false, { backends: ['glide'] }));
    assert.equal(status.available, false);
    assert.match(status.reason ?? '', /backends/);
  });
});

void describe('webgpu device', { skip }, () => {
  if (!opened.ok) return;
  const o: Opened = opened.opened;
  const dev: WebGpuDevice = o.device;
  after(() => dev.close());

  void it('describes the adapter, its limits and how it was chosen', () => {
    const d = dev.info.details;
    assert.equal(dev.info.kind, 'webgpu');
    assert.ok(dev.info.name.length > 0);
    assert.ok(['vulkan', 'metal', 'd3d12', 'opengles'].includes(String(d.backend)));
    assert.equal(typeof d.software, 'boolean');
    assert.ok(Number(d.maxStorageBufferBindingSize) >= 128 << 20);
    assert.ok(Number(d.maxComputeInvocationsPerWorkgroup) >= 256, 'workgroup limits were raised');
    assert.match(String(d.tried), new RegExp(String(d.backend)));
    console.log(
      `# ${dev.info.name}: ${String(d.backend)} ${String(d.featureLevel)}, features: ${String(d.features)}`,
    );
  });

  void it('refuses a buffer over the adapter limit before creating it, with both numbers', () => {
    const { bytes: limit, limit: name } = dev.node.maxBufferBytes;
    const want = limit + 1024;
    assert.throws(
      () => dev.node.alloc(want),
      (e: unknown) =>
        isTandemError(e, 'TANDEM_ERR_LIMIT') &&
        e.message.includes(String(want)) &&
        e.message.includes(String(limit)) &&
        e.message.includes(name),
    );
  });

  void it('reuses freed buffers of the same size class', () => {
    const a = dev.node.alloc(10_000);
    dev.node.free(a);
    const b = dev.node.alloc(9_990);
    assert.equal(b.gpu, a.gpu);
    dev.node.free(b);
  });

  void it("returns Dawn's compiler messages as TANDEM_ERR_COMPILE, then keeps working", async () => {
    const broken: WgslCustomKernel = {
      wgsl: '@compute @workgroup_size(1)\nfn main() {\n  let x: f32 = undefined_thing + 1.0;\n}\n',
      entry: 'main',
      workgroups: [1, 1, 1],
    };
    await assert.rejects(launchAsync(o, 'custom', broken, [], {}), (e: unknown) => {
      assert.ok(isTandemError(e, 'TANDEM_ERR_COMPILE'), String(e));
      assert.match(e.message, /undefined_thing/);
      assert.match(e.message, /3:\d+/, 'line:column from Dawn');
      return true;
    });
    const x = randomF32(100);
    const [, y] = await runOnDevice(
      o,
      'axpy',
      axpyWebGpu,
      [
        { desc: f32(100), data: x },
        { desc: f32(100), data: new Float32Array(100).fill(1) },
      ],
      { alpha: 2 },
    );
    assert.ok(Math.abs(y![7]! - (2 * x[7]! + 1)) < 1e-6);
  });

  void it('runs custom WGSL with scalars as uniforms and linear workgroup counts', async () => {
    const kernel: WgslCustomKernel = {
      wgsl: `struct U { a: f32, n: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<uniform> u: U;
@compute @workgroup_size(64)
fn twice(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) g: vec3<u32>, @builtin(local_invocation_index) l: u32) {
  let i = (w.y * g.x + w.x) * 64u + l;
  if (i < u.n) { Y[i] = u.a * X[i] * X[i]; }
}`,
      entry: 'twice',
      workgroups: (args) => ({ linear: Math.ceil(args[0]!.shape[0]! / 64) }),
      uniforms: [
        { name: 'a', type: 'f32' },
        { name: 'n', type: 'u32' },
      ],
    };
    const n = 1000;
    const x = randomF32(n);
    const [, y] = await runOnDevice(
      o,
      'square_scaled',
      kernel,
      [
        { desc: f32(n), data: x },
        { desc: f32(n), data: new Float32Array(n).fill(NaN) },
      ],
      { a: 3, n },
    );
    for (let i = 0; i < n; i++)
      assert.ok(Math.abs(y![i]! - 3 * x[i]! * x[i]!) <= 1e-5 * 3 * x[i]! * x[i]!, `y[${i}]`);
  });

  void it('keeps launch order while the first launch is still compiling', async () => {
    const n = 4099;
    const x = randomF32(n);
    const bufs = [dev.node.alloc(4 * n), dev.node.alloc(4 * n)];
    const hx = o.host.alloc(4 * n);
    new Float32Array(hx.sab, 0, n).set(x);
    const hy = o.host.alloc(4 * n);
    new Float32Array(hy.sab, 0, n).fill(0.5);
    await copyAsync(o.h2d, hx, bufs[0]!, 4 * n);
    await copyAsync(o.h2d, hy, bufs[1]!, 4 * n);
    const args: LaunchArg[] = bufs.map((buffer) => ({ buffer, desc: f32(n) }));
    // Alternating y += 0.25 x and y *= 1.5 (scale compiles later than axpy): any reordering of the
    // submissions changes the result, so it must equal the sequential float64 replay.
    const launches = Array.from({ length: 12 }, (_, i) =>
      i % 2 === 0
        ? launchAsync(o, 'axpy', axpyWebGpu, args, { alpha: 0.25 })
        : launchAsync(o, 'scale', scaleWebGpu, [args[1]!], { alpha: 1.5 }),
    );
    await Promise.all(launches);
    await copyAsync(o.d2h, bufs[1]!, hy, 4 * n);
    const got = new Float32Array(hy.sab, 0, n);
    for (const i of [0, 1, 2047, n - 1]) {
      let want = 0.5;
      for (let step = 0; step < 12; step++) want = step % 2 === 0 ? want + 0.25 * x[i]! : want * 1.5;
      assert.ok(Math.abs(got[i]! - want) <= 1e-5 * Math.abs(want), `y[${i}] = ${got[i]}, want ${want}`);
    }
    for (const b of bufs) dev.node.free(b);
  });

  void it('spreads more than 65535 workgroups over a 2-D grid (fill and scale reach the last element)', async () => {
    const n = 256 * 65_535 + 300; // one more row of workgroups than a dimension holds
    const desc = f32(n);
    const buf = dev.node.alloc(desc.bytes);
    try {
      await launchAsync(o, 'fill', fillWebGpu, [{ buffer: buf, desc }], { value: 1.25 });
      await launchAsync(o, 'scale', scaleWebGpu, [{ buffer: buf, desc }], { alpha: -2 });
      const h = o.host.alloc(desc.bytes);
      new Float32Array(h.sab, 0, n).fill(NaN);
      await copyAsync(o.d2h, buf, h, desc.bytes);
      const got = new Float32Array(h.sab, 0, n);
      for (const i of [0, 255, 256 * 65_535 - 1, 256 * 65_535, n - 1])
        assert.equal(got[i], -2.5, `element ${i}`);
    } finally {
      dev.node.free(buf);
    }
  });

  void it('fails a chained launch whose predecessor failed, with TANDEM_ERR_DEPENDENCY_FAILED', async () => {
    const broken: WgslCustomKernel = { wgsl: 'fn nope(', entry: 'main', workgroups: [1, 1, 1] };
    const q = dev.queues[0]!;
    const first = new Promise<Error | null>((r) =>
      q.launch({ taskId: 900_001, op: 'broken', impl: broken, args: [], scalars: {}, after: [] }, r),
    );
    const second = new Promise<Error | null>((r) =>
      q.launch(
        {
          taskId: 900_002,
          op: 'noop',
          impl: noopWebGpu,
          args: [],
          scalars: {},
          after: [900_001],
        },
        r,
      ),
    );
    // Also broken itself: the dependency is the reported cause, and its own rejection stays handled.
    const third = new Promise<Error | null>((r) =>
      q.launch({ taskId: 900_003, op: 'broken', impl: broken, args: [], scalars: {}, after: [900_001] }, r),
    );
    assert.ok(isTandemError(await first, 'TANDEM_ERR_COMPILE'));
    assert.ok(isTandemError(await third, 'TANDEM_ERR_DEPENDENCY_FAILED'));
    assert.ok(isTandemError(await second, 'TANDEM_ERR_DEPENDENCY_FAILED'), String(await second));
  });

  const blocking = dev.info.details.blockingSubmit === true;
  const blockingReason = `${String(dev.info.details.backend)} runs work inside queue.submit (blockingSubmit)`;
  void it(
    'leaves the event loop free while a GEMM runs',
    { skip: blocking ? blockingReason : false },
    async () => {
      // Enough work to keep a hardware GPU busy for a few hundred milliseconds (4096³ is ~137 GFLOP).
      const software = dev.info.details.software === true;
      const n = software ? 384 : 4096;
      const launches = software ? 4 : 40;
      const desc: TensorDesc = { shape: [n, n], dtype: 'f32', bytes: 4 * n * n };
      const bufs = [dev.node.alloc(desc.bytes), dev.node.alloc(desc.bytes), dev.node.alloc(desc.bytes)];
      const args = bufs.map((buffer) => ({ buffer, desc }));
      await launchAsync(o, 'gemm', gemmWebGpu, args, { alpha: 1, beta: 0 }); // compiled before timing
      let ticks = 0;
      let worstGap = 0;
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        worstGap = Math.max(worstGap, now - last);
        last = now;
        ticks++;
      }, 5);
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: launches }, () =>
          launchAsync(o, 'gemm', gemmWebGpu, args, { alpha: 1, beta: 0 }),
        ),
      );
      const ms = performance.now() - t0;
      clearInterval(timer);
      for (const b of bufs) dev.node.free(b);
      console.log(
        `# ${launches} GEMMs ${n}³ took ${ms.toFixed(0)} ms; timer ticked ${ticks}×, worst gap ${worstGap.toFixed(1)} ms`,
      );
      assert.ok(ms >= 50, `the GPU work (${ms.toFixed(0)} ms) was long enough to observe`);
      assert.ok(worstGap < 50, `the event loop stalled for ${worstGap.toFixed(1)} ms`);
      assert.ok(ticks >= Math.floor(ms / 25), `timer ticked ${ticks} times in ${ms.toFixed(0)} ms`);
    },
  );
});

void describe('webgpu calibration', { skip }, () => {
  void it('measures f32 GEMM rate and bandwidth once, then reads them from the cache', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tandem-wgpu-cal-'));
    const first = await new WebGpuBackend({ calibrationGemm: gemmWebGpu }).open(ctx(dir, true, {}));
    const d1 = first.devices[0]!;
    await d1.close();
    assert.ok((d1.info.peakFlops.f32 ?? 0) > 0, 'peak f32 measured');
    assert.ok((d1.info.memoryBandwidth ?? 0) > 0, 'bandwidth measured');
    const cache = JSON.parse(readFileSync(join(dir, 'webgpu-calibration.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.equal(Object.keys(cache).length, 1);
    const second = await new WebGpuBackend().open(ctx(dir, false, {}));
    const d2 = second.devices[0]!;
    await d2.close();
    assert.equal(d2.info.peakFlops.f32, d1.info.peakFlops.f32);
    assert.equal(d2.info.memoryBandwidth, d1.info.memoryBandwidth);
    console.log(
      `# calibrated: ${((d1.info.peakFlops.f32 ?? 0) / 1e9).toFixed(2)} GFLOP/s f32, ${((d1.info.memoryBandwidth ?? 0) / 1e9).toFixed(2)} GB/s`,
    );
  });
});

void describe('webgpu device after close', { skip }, () => {
  void it('refuses allocations and launches with TANDEM_ERR_CLOSED and declines every op', async () => {
    const again = await openWebGpu();
    assert.ok(again.ok);
    const o = again.opened;
    await o.device.close();
    await o.device.close(); // idempotent
    assert.throws(
      () => o.device.node.alloc(64),
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_CLOSED'),
    );
    await assert.rejects(launchAsync(o, 'noop', noopWebGpu, [], {}), (e: unknown) =>
      isTandemError(e, 'TANDEM_ERR_CLOSED'),
    );
    assert.equal(o.device.supports('noop', [], {}), false);
  });
});
