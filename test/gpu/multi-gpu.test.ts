/**
 * The multi-GPU workloads through the runtime on however many GPUs there are (one is enough to run
 * the code paths): partial sums across devices, a sharded sum, and a tiled GEMM spread over all GPUs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import {
  fillTiles,
  freeTiles,
  shardedSum,
  submitGemmTiles,
  sumPartials,
} from '../../src/workloads/multi-gpu/index.js';
import { openCuda } from './cuda-harness.js';

const st = await openCuda();
const reason = st.devices.length > 0 ? false : (st.reason ?? 'no CUDA device');
if (reason) console.log(`# skip multi-gpu workloads: ${reason}`);

void describe('multi-GPU workloads on CUDA', { skip: reason }, () => {
  let rt: Runtime | null = null;
  let ids: string[] = [];
  before(async () => {
    rt = await Runtime.create({
      backends: ['cpu', 'cuda'],
      scheduler: 'dmdas',
      calibrate: false,
      cacheDir: mkdtempSync(join(tmpdir(), 'tandem-mgpu-')),
      log: () => undefined,
    });
    ids = rt.devices.filter((d) => d.info.kind === 'cuda').map((d) => d.info.id);
  });
  after(async () => {
    await rt?.close();
  });

  void it('sumPartials: five 8 MiB partials spread over the GPUs sum elementwise', async () => {
    const n = 2 << 20;
    const devs = [0, 1, 2, 3, 4].map((i) => ids[i % ids.length]!);
    const parts = devs.map((_, k) => rt!.tensor([n], 'f32', new Float32Array(n).fill(k + 1)));
    // Put each partial on its GPU first (the data-parallel starting point).
    await Promise.all(
      parts.map(
        (x, i) => rt!.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 }, device: devs[i]! }).done,
      ),
    );
    const s = sumPartials(rt!, parts, devs);
    await s.wait();
    const got = (await rt!.read(s.result)) as Float32Array;
    assert.equal(got[0], 15);
    assert.equal(got[n - 1], 15);
    assert.ok(got.every((v) => v === 15));
  });

  void it('shardedSum: shards on different GPUs reduce to one total', async () => {
    const shards = ids
      .concat(ids)
      .map((_, k) => rt!.tensor([1000], 'f32', new Float32Array(1000).fill(k + 1)));
    const devs = shards.map((_, i) => ids[i % ids.length]!);
    const s = shardedSum(rt!, shards, devs);
    await s.wait();
    const want = (1000 * shards.length * (shards.length + 1)) / 2;
    assert.equal((await rt!.read(s.result))[0], want);
  });

  void it('tiled GEMM over every GPU (scheduler spreads the tiles) is exact on small integers', async () => {
    const a = await fillTiles(rt!, 1024, 256, 'f32', ids, () => 1);
    const b = await fillTiles(rt!, 1024, 256, 'f32', ids, () => 2);
    const c = await fillTiles(rt!, 1024, 256, 'f32', ids, () => 3);
    await submitGemmTiles(rt!, a, b, c, { device: 'cuda' }).wait();
    for (const [m, k] of [
      [0, 0],
      [3, 1],
      [2, 3],
    ] as const) {
      const t = (await rt!.read(c.tiles[m]![k]!)) as Float32Array;
      assert.ok(
        t.every((v) => v === 3 + 2 * 1024),
        `tile (${m}, ${k})`,
      );
    }
    for (const g of [a, b, c]) freeTiles(rt!, g);
  });
});
