/**
 * The Cholesky tile kernels on CUDA (cuSOLVER potrf, cuBLAS trsm/syrk) against float64 references of
 * the CPU ops' exact semantics (row-major, lower triangle, upper triangle left untouched), a
 * non-positive-definite potrf failing with the minor, and a tiled Cholesky through rt.submit on CUDA.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LaunchArg, Scalars } from '../../src/devices/device.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { potrfTs, syrkTs, trsmTs } from '../../src/kernels/common/tile.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { readTiles, spdValue, submitCholesky, tileMatrix } from '../../src/workloads/tiled/index.js';
import { cudaDevice, download, hostBuffer, launch, upload } from './cuda-harness.js';

type F = 'f32' | 'f64';
const { device, reason } = await cudaDevice();
if (!device) console.log(`# skip cuda tiles: ${reason}`);

function rnd(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** Symmetric, diagonally dominant (so positive definite) n x n, row-major. */
function spd(n: number, seed: number): Float64Array {
  const r = rnd(seed);
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = 0; j <= i; j++) {
      const v = i === j ? n + r() : r();
      a[i * n + j] = v;
      a[j * n + i] = v;
    }
  return a;
}

function random(len: number, seed: number): Float64Array {
  const r = rnd(seed);
  return Float64Array.from({ length: len }, () => r());
}

/** A lower-triangular tile with a well-conditioned diagonal; the upper triangle holds junk on purpose. */
function lowerTile(n: number, seed: number): Float64Array {
  const r = rnd(seed);
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) a[i * n + j] = j < i ? r() / 4 : j === i ? 1.5 + r() : 1e3 + r();
  return a;
}

/** Runs `op` on `inputs` (row-major f64 values stored as dtype) and returns every argument afterwards. */
async function run(
  dev: CudaDevice,
  op: string,
  dtype: F,
  inputs: { data: Float64Array; shape: [number, number] }[],
  scalars: Scalars = {},
): Promise<Float64Array[]> {
  const es = dtype === 'f64' ? 8 : 4;
  const bufs = inputs.map((x) => {
    const bytes = x.data.length * es;
    const host = hostBuffer(Math.max(bytes, 8));
    if (dtype === 'f64') new Float64Array(host.sab, 0, x.data.length).set(x.data);
    else new Float32Array(host.sab, 0, x.data.length).set(x.data);
    return { host, dev: dev.node.alloc(Math.max(bytes, 8)), bytes, x };
  });
  try {
    for (const b of bufs) await upload(dev, b.host, b.dev, b.bytes);
    const args: LaunchArg[] = bufs.map((b) => ({
      buffer: b.dev,
      desc: { shape: b.x.shape, dtype, bytes: b.bytes },
    }));
    await launch(dev, op, args, scalars);
    const out: Float64Array[] = [];
    for (const b of bufs) {
      await download(dev, b.dev, b.host, b.bytes);
      const n = b.x.data.length;
      out.push(
        Float64Array.from(
          dtype === 'f64' ? new Float64Array(b.host.sab, 0, n) : new Float32Array(b.host.sab, 0, n),
        ),
      );
    }
    return out;
  } finally {
    for (const b of bufs) dev.node.free(b.dev);
  }
}

/** Worst |got - want| / (1 + |want|), with the index, so a failure says where. */
function worst(got: Float64Array, want: Float64Array): { err: number; at: number } {
  let err = 0;
  let at = -1;
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!) / (1 + Math.abs(want[i]!));
    if (!(e <= err)) {
      err = e;
      at = i;
    }
  }
  return { err, at };
}

const tol = (d: F): number => (d === 'f64' ? 1e-10 : 2e-4);
/** Rounds to the storage dtype first, so the reference starts from what the GPU saw. */
const stored = (x: Float64Array, d: F): Float64Array =>
  d === 'f64' ? x : Float64Array.from(Float32Array.from(x));

void describe('cuda tile kernels', { skip: device ? false : reason }, () => {
  for (const dtype of ['f32', 'f64'] as const) {
    for (const n of [1, 33, 128]) {
      void it(`potrf ${dtype} ${n}x${n}: lower = L, upper untouched`, async () => {
        const a = stored(spd(n, n + 7), dtype);
        for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) a[i * n + j] = 777; // must survive
        const want = Float64Array.from(a);
        assert.equal(potrfTs(n, want), 0);
        const [got] = await run(device!, 'potrf', dtype, [{ data: a, shape: [n, n] }]);
        const w = worst(got!, want);
        assert.ok(w.err <= tol(dtype), `max rel error ${w.err} at (${Math.floor(w.at / n)}, ${w.at % n})`);
      });
    }
    for (const [m, n] of [
      [70, 48],
      [1, 5],
      [256, 64],
    ] as const) {
      void it(`trsm ${dtype} b ${m}x${n}: B := B·L⁻ᵀ reading only the lower triangle of a`, async () => {
        const l = stored(lowerTile(n, m + n), dtype);
        const b = stored(random(m * n, m * 3 + n), dtype);
        const want = Float64Array.from(b);
        trsmTs(m, n, l, want);
        const [la, got] = await run(device!, 'trsm', dtype, [
          { data: l, shape: [n, n] },
          { data: b, shape: [m, n] },
        ]);
        assert.deepEqual(Array.from(la!), Array.from(l), 'a must not be written');
        const w = worst(got!, want);
        assert.ok(w.err <= tol(dtype), `max rel error ${w.err} at (${Math.floor(w.at / n)}, ${w.at % n})`);
      });
    }
    for (const [n, k, alpha, beta] of [
      [40, 56, -1, 1],
      [64, 64, 0.5, 2],
      [17, 3, 1, 0],
    ] as const) {
      void it(`syrk ${dtype} n=${n} k=${k} alpha=${alpha} beta=${beta}: lower only`, async () => {
        const a = stored(random(n * k, n + k), dtype);
        const c = stored(random(n * n, n * k + 1), dtype);
        const want = Float64Array.from(c);
        syrkTs(n, k, alpha, a, beta, want); // leaves the strict upper triangle as it was
        const [, got] = await run(
          device!,
          'syrk',
          dtype,
          [
            { data: a, shape: [n, k] },
            { data: c, shape: [n, n] },
          ],
          { alpha, beta },
        );
        const w = worst(got!, want);
        assert.ok(w.err <= tol(dtype), `max rel error ${w.err} at (${Math.floor(w.at / n)}, ${w.at % n})`);
      });
    }
  }

  void it('potrf of a matrix that is not positive definite fails with the minor, and the device goes on', async () => {
    const n = 16;
    const a = spd(n, 3);
    a[5 * n + 5] = -100; // leading minor 6 is negative
    await assert.rejects(
      run(device!, 'potrf', 'f32', [{ data: a, shape: [n, n] }]),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'TANDEM_ERR_KERNEL_FAILED');
        assert.match(e.message, /not positive definite at minor 6/);
        return true;
      },
    );
    const ok = spd(n, 4);
    const want = Float64Array.from(stored(ok, 'f32'));
    potrfTs(n, want);
    const [got] = await run(device!, 'potrf', 'f32', [{ data: ok, shape: [n, n] }]);
    assert.ok(worst(got!, want).err <= 2e-4);
  });
});

void describe('tiled Cholesky through rt.submit on CUDA', { skip: device ? false : reason }, () => {
  let rt: Runtime | null = null;
  before(async () => {
    rt = await Runtime.create({
      backends: ['cpu', 'cuda'],
      scheduler: 'dmdas',
      calibrate: false,
      cacheDir: mkdtempSync(join(tmpdir(), 'tandem-tiles-')),
      log: () => undefined,
    });
  });
  after(async () => {
    await rt?.close();
  });
  for (const dtype of ['f32', 'f64'] as const) {
    void it(`${dtype} n=512, 128-tiles, every task on cuda: ‖L·Lᵀ − A‖ small`, async () => {
      const n = 512;
      const value = spdValue(n, 5);
      const a = tileMatrix(rt!, n, 128, dtype, value, true);
      await submitCholesky(rt!, a, { device: 'cuda' }).wait();
      const l = await readTiles(rt!, a, true);
      let err = 0;
      for (let i = 0; i < n; i += 7)
        for (let j = 0; j <= i; j++) {
          let s = 0;
          for (let p = 0; p <= j; p++) s += l[i * n + p]! * l[j * n + p]!;
          err = Math.max(err, Math.abs(s - value(i, j)) / n);
        }
      assert.ok(err < (dtype === 'f64' ? 1e-12 : 1e-5), `residual ${err}`);
    });
  }
});
