/**
 * The workload kernels on every GPU backend present (WebGPU through Dawn — llvmpipe in CI — and CUDA on
 * the GPU machine), against the CPU: Philox words bit for bit, option prices from the same paths, and on
 * CUDA the MD run against the f64 reference. A backend that is absent skips with its reason.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { philox4x32 } from '../../src/kernels/mc_common/philox.js';
import { runMd } from '../../src/workloads/md/run.js';
import { validateMdParams } from '../../src/workloads/md/params.js';
import { runLocal } from '../../src/workloads/md/simulate.js';
import { EXAMPLE_PORTFOLIO } from '../../src/workloads/risk/params.js';
import { portfolioVar, priceOption } from '../../src/workloads/risk/run.js';

for (const kind of ['webgpu', 'cuda'] as const) {
  void describe(`workloads on ${kind}`, () => {
    let rt: Runtime | null = null;
    let reason = '';
    before(async () => {
      const r = await Runtime.create({ backends: ['cpu', kind], calibrate: false, log: () => undefined });
      const status = r.backends.find((b) => b.kind === kind);
      if (status?.available) rt = r;
      else {
        reason = `${kind} unavailable: ${status?.reason ?? 'not opened'}`;
        await r.close();
      }
    });
    after(async () => {
      await rt?.close();
    });

    void test('philox_fill is bit-identical to the CPU generator', async (t) => {
      if (!rt) return t.skip(reason);
      const n = 4099;
      const out = rt.tensor([n, 4], 'i32');
      const scalars = { first: 2 ** 32 - 5000, block: 7, k0: 0xdeadbeef, k1: 0x12345678 };
      await rt.submit({ kernel: 'philox_fill', args: { out }, scalars, device: kind }).done;
      const got = await rt.read(out);
      const w = new Uint32Array(4);
      for (let i = 0; i < n; i++) {
        philox4x32(scalars.first + i, 7, 0, 0, scalars.k0, scalars.k1, w);
        for (let k = 0; k < 4; k++)
          if (got[4 * i + k] !== (w[k]! | 0))
            assert.fail(`stream ${i} word ${k}: ${got[4 * i + k]} vs ${w[k]! | 0}`);
      }
      rt.free(out);
    });

    void test('option prices equal the CPU ones (same paths, f32 vs f64 arithmetic)', async (t) => {
      if (!rt) return t.skip(reason);
      for (const type of ['european', 'asian'] as const) {
        const p = { type, paths: 200_000, steps: 10, vol: 0.3, strike: 105 };
        const a = await priceOption(rt, { ...p, device: 'cpu' });
        const b = await priceOption(rt, { ...p, device: kind });
        assert.deepEqual(Object.keys(b.devices), [`${kind}0`]);
        assert.ok(
          Math.abs(a.price - b.price) < 2e-4 * a.price,
          `${type}: cpu ${a.price} vs ${kind} ${b.price}`,
        );
        assert.ok(Math.abs(a.stdError - b.stdError) < 1e-3 * a.stdError);
      }
    });

    void test('VaR agrees with the CPU', async (t) => {
      if (!rt) return t.skip(reason);
      const a = await portfolioVar(rt, { portfolio: EXAMPLE_PORTFOLIO, scenarios: 50_000, device: 'cpu' });
      const b = await portfolioVar(rt, { portfolio: EXAMPLE_PORTFOLIO, scenarios: 50_000, device: kind });
      assert.ok(
        Math.abs(a.valueAtRisk - b.valueAtRisk) < 1e-3 * a.valueAtRisk,
        `${a.valueAtRisk} vs ${b.valueAtRisk}`,
      );
    });

    void test('MD (f32 on the GPU) follows the f64 reference', async (t) => {
      if (!rt) return t.skip(reason);
      // WebGPU: forces and integration in WGSL, the list built by the CPU kernel (runtime moves the data).
      const params = { cells: kind === 'cuda' ? 10 : 6, steps: 40, thermoEvery: 20, neighEvery: 10 };
      const md = await runMd(rt, { ...params, device: kind });
      const ref = runLocal(validateMdParams(params));
      assert.equal(md.device, kind);
      assert.ok((md.devices[`${kind}0`] ?? 0) > 0);
      for (let i = 0; i < ref.thermo.length; i++) {
        for (const k of ['temp', 'epair', 'toteng'] as const) {
          const x = md.thermo[i]![k];
          const y = ref.thermo[i]![k];
          assert.ok(
            Math.abs(x - y) < 2e-5 * Math.abs(y) + 1e-5,
            `step ${ref.thermo[i]!.step} ${k}: ${kind} ${x} vs f64 ${y}`,
          );
        }
      }
    });
  });
}
