/**
 * mc_european_batch on a real GPU (skips without CUDA): 16 options of 10^6 paths in one launch, each
 * price bit-identical to the single-option job's on the same GPU (same streams, rows and f32 partial
 * sums), and within f32 error of the CPU's float64 engine on the same paths.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { europeanSpec, priceEuropeanBatch } from '../../src/workloads/risk/batch.js';
import { priceOption } from '../../src/workloads/risk/run.js';

const OPTIONS = Array.from({ length: 16 }, (_, i) => ({
  right: i % 2 === 0 ? ('call' as const) : ('put' as const),
  spot: 90 + i,
  strike: 100,
  rate: 0.03,
  vol: 0.15 + 0.02 * i,
  maturity: 0.5 + 0.1 * i,
  dividend: 0.01,
  paths: 1_000_000 + i,
  antithetic: i % 3 !== 0,
  seed: 20261203 + i * 2 ** 33,
}));

void describe('mc_european_batch on CUDA', () => {
  let rt: Runtime | null = null;
  let reason = '';
  before(async () => {
    const r = await Runtime.create({ backends: ['cpu', 'cuda'], calibrate: false, log: () => undefined });
    const status = r.backends.find((b) => b.kind === 'cuda');
    if (status?.available) rt = r;
    else {
      reason = `cuda unavailable: ${status?.reason ?? 'not opened'}`;
      await r.close();
    }
  });
  after(async () => {
    await rt?.close();
  });

  void it('16 options of 10^6 paths: each price equals the single-option job on the GPU', async (t) => {
    if (!rt) return t.skip(reason);
    const specs = OPTIONS.map((o) => europeanSpec(o));
    const batched = await priceEuropeanBatch(rt, specs, { device: 'cuda', tasks: 1 });
    for (let i = 0; i < OPTIONS.length; i++) {
      const single = await priceOption(rt, { type: 'european', ...OPTIONS[i]!, device: 'cuda' });
      assert.equal(single.tasks, 1);
      assert.equal(batched[i]!.price, single.price, `option ${i}`);
      assert.equal(batched[i]!.stdError, single.stdError, `option ${i}`);
    }
  });

  void it('agrees with the CPU engine on the same paths within f32 error', async (t) => {
    if (!rt) return t.skip(reason);
    const specs = OPTIONS.slice(0, 4).map((o) => europeanSpec({ ...o, paths: 40_000 }));
    const gpu = await priceEuropeanBatch(rt, specs, { device: 'cuda' });
    const cpu = await priceEuropeanBatch(rt, specs, { device: 'cpu', tasks: 2 });
    gpu.forEach((g, i) => {
      const c = cpu[i]!;
      assert.ok(
        Math.abs(g.price - c.price) <= 1e-4 * c.price + 1e-5,
        `option ${i}: ${g.price} vs ${c.price}`,
      );
    });
  });
});
