/**
 * Automatic CUDA graphs (launch-batcher.ts) on the real GPU: repeated runs of small launches replay
 * from recorded graphs and compute exactly what launching them one by one computes; runs that do not
 * repeat are launched one by one; a chain through rt.submit uses graphs and matches a float64 reference.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { GRAPH_GROUP } from '../../src/devices/cuda/launch-batcher.js';
import type { CudaBuffer } from '../../src/devices/cuda/memory-node.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { cudaDevice, download, hostBuffer, launch, upload } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
const dev = device as CudaDevice;

/** Random values in [0.5, 1.5) (never zero), deterministic per seed. */
function randomValues(n: number, seed: number): Float64Array {
  const a = new Float64Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    a[i] = 0.5 + (s >>> 8) / 16777216;
  }
  return a;
}

async function toDevice(values: Float64Array): Promise<CudaBuffer> {
  const h = hostBuffer(values.length * 4);
  new Float32Array(h.sab, 0, values.length).set(values);
  const buf = dev.node.alloc(values.length * 4);
  await upload(dev, h, buf);
  return buf;
}

async function fromDevice(buf: CudaBuffer, n: number): Promise<Float32Array> {
  const h = hostBuffer(n * 4);
  new Float32Array(h.sab, 0, n).fill(NaN); // poison: an unwritten element shows
  await download(dev, buf, h);
  return new Float32Array(h.sab, 0, n).slice();
}

function assertClose(got: Float32Array, want: Float64Array, rel: number): void {
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i]! - want[i]!) / Math.abs(want[i]!);
    assert.ok(err <= rel, `element ${i}: got ${got[i]}, want ${want[i]} (relative error ${err})`);
  }
}

void describe('automatic CUDA graphs for repeated launches', { skip: device ? false : reason }, () => {
  const n = 1000;
  const desc = { shape: [n], dtype: 'f32' as const, bytes: n * 4 };

  void it('a run of identical launches replays from a graph and matches the float64 reference', async () => {
    const x0 = randomValues(n, 11);
    const buf = await toDevice(x0);
    const before = { ...dev.batcher.stats };
    const steps = 20 * GRAPH_GROUP + 5;
    const alpha = 1.001;
    const all: Promise<void>[] = [];
    for (let i = 0; i < steps; i++) all.push(launch(dev, 'scale', [{ buffer: buf, desc }], { alpha }));
    await Promise.all(all);
    const s = dev.batcher.stats;
    assert.ok(s.captures > before.captures, 'a graph was recorded');
    assert.ok(s.graphed - before.graphed >= 18 * GRAPH_GROUP, `graphed ${s.graphed - before.graphed}`);
    const want = x0.map((v) => v * alpha ** steps);
    assertClose(await fromDevice(buf, n), want, 1e-4);
    dev.node.free(buf);
  });

  void it('a loop of two kernels over two tensors replays and keeps their order', async () => {
    const x0 = randomValues(n, 12);
    const y0 = randomValues(n, 13);
    const x = await toDevice(x0);
    const y = await toDevice(y0);
    const before = dev.batcher.stats.graphed;
    const iters = 10 * GRAPH_GROUP;
    const all: Promise<void>[] = [];
    // y = 0.5 * x + y, then x = 0.9 * x: the order matters, so a wrong replay order would show.
    for (let i = 0; i < iters; i++) {
      all.push(
        launch(
          dev,
          'axpy',
          [
            { buffer: x, desc },
            { buffer: y, desc },
          ],
          { alpha: 0.5 },
        ),
      );
      all.push(launch(dev, 'scale', [{ buffer: x, desc }], { alpha: 0.9 }));
    }
    await Promise.all(all);
    assert.ok(dev.batcher.stats.graphed > before, 'some groups ran from graphs');
    const wx = Float64Array.from(x0);
    const wy = Float64Array.from(y0);
    for (let i = 0; i < iters; i++)
      for (let k = 0; k < n; k++) {
        wy[k] = 0.5 * wx[k]! + wy[k]!;
        wx[k] = 0.9 * wx[k]!;
      }
    assertClose(await fromDevice(x, n), wx, 1e-4);
    assertClose(await fromDevice(y, n), wy, 1e-4);
    dev.node.free(x);
    dev.node.free(y);
  });

  void it('launches that never repeat go one by one and are all applied', async () => {
    const x0 = randomValues(n, 14);
    const buf = await toDevice(x0);
    const before = { ...dev.batcher.stats };
    const all: Promise<void>[] = [];
    let factor = 1;
    for (let i = 0; i < 4 * GRAPH_GROUP; i++) {
      const alpha = 1 + (i + 1) / 1024; // a different value every launch: no group repeats
      factor *= alpha;
      all.push(launch(dev, 'scale', [{ buffer: buf, desc }], { alpha }));
    }
    await Promise.all(all);
    assert.equal(dev.batcher.stats.graphed, before.graphed, 'no graph replayed');
    assert.equal(dev.batcher.stats.single - before.single, 4 * GRAPH_GROUP);
    assertClose(
      await fromDevice(buf, n),
      x0.map((v) => v * factor),
      1e-4,
    );
    dev.node.free(buf);
  });
});

void describe('a tiny-kernel chain through rt.submit on CUDA', { skip: device ? false : reason }, () => {
  let rt: Runtime | null = null;
  before(async () => {
    rt = await Runtime.create({
      backends: ['cuda'],
      calibrate: false,
      cacheDir: mkdtempSync(join(tmpdir(), 'tandem-batching-')),
      log: () => undefined,
    });
  });
  after(async () => {
    await rt?.close();
  });

  void it('5000 dependent scale tasks run (mostly from graphs) and match the float64 reference', async () => {
    const n = 256;
    const x0 = randomValues(n, 15);
    const x = rt!.tensor([n], 'f32', Float32Array.from(x0));
    const cuda = rt!.devices.find((d) => d.info.kind === 'cuda') as CudaDevice;
    const before = cuda.batcher.stats.graphed;
    const steps = 5000;
    const alpha = 1.0001;
    let last: Promise<unknown> = Promise.resolve();
    for (let i = 0; i < steps; i++)
      last = rt!.submit({ kernel: 'scale', args: { x }, scalars: { alpha }, device: 'cuda' }).done;
    await last;
    const got = (await rt!.read(x)) as Float32Array;
    assert.ok(
      cuda.batcher.stats.graphed - before > steps / 2,
      `graphed ${cuda.batcher.stats.graphed - before}`,
    );
    assertClose(
      got,
      x0.map((v) => v * alpha ** steps),
      1e-3,
    );
  });
});
