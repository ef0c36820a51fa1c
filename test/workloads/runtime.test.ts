import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { runMd } from '../../src/workloads/md/run.js';
import { validateMdParams } from '../../src/workloads/md/params.js';
import { runLocal } from '../../src/workloads/md/simulate.js';
import { blackScholes } from '../../src/workloads/risk/black-scholes.js';
import { EXAMPLE_PORTFOLIO } from '../../src/workloads/risk/params.js';
import { portfolioVar, priceOption } from '../../src/workloads/risk/run.js';

let rt: Runtime;

before(async () => {
  rt = await Runtime.create({ backends: ['cpu'], calibrate: false, options: { cpu: { threads: 2 } } });
});

after(async () => {
  await rt.close();
});

void test('runMd through the runtime (CPU kernels) reproduces the local engine', async () => {
  const params = { cells: 5, steps: 40, thermoEvery: 20, neighEvery: 10 };
  const rows: number[] = [];
  const res = await runMd(rt, { ...params, device: 'cpu' }, { onThermo: (r) => rows.push(r.step) });
  const ref = runLocal(validateMdParams(params));
  assert.deepEqual(rows, [0, 20, 40]);
  assert.equal(res.atoms, 500);
  assert.equal(res.thermo.length, ref.thermo.length);
  for (let i = 0; i < ref.thermo.length; i++) {
    for (const k of ['temp', 'epair', 'toteng', 'press'] as const) {
      const a = res.thermo[i]![k];
      const b = ref.thermo[i]![k];
      assert.ok(
        Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)),
        `step ${res.thermo[i]!.step} ${k}: ${a} vs ${b}`,
      );
    }
  }
  assert.equal(res.neighborBuilds, 5);
  assert.ok(res.atomStepsPerSecond > 0);
});

void test('runMd: an f32 run stays close to f64, and impossible requests fail before running', async () => {
  const res = await runMd(rt, { cells: 5, steps: 20, thermoEvery: 20, precision: 'f32', device: 'cpu' });
  const ref = runLocal(validateMdParams({ cells: 5, steps: 20, thermoEvery: 20 }));
  assert.ok(Math.abs(res.thermo[1]!.toteng - ref.thermo[1]!.toteng) < 1e-4);
  await assert.rejects(runMd(rt, { cells: 5, device: 'cuda' }), (e: unknown) =>
    isTandemError(e, 'TANDEM_ERR_NO_DEVICE'),
  );
  await assert.rejects(runMd(rt, { density: -1 }), (e: unknown) =>
    isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
  );
  await assert.rejects(
    runMd(rt, {
      cells: 4,
      temperature: 1e6,
      dt: 0.5,
      steps: 50,
      thermoEvery: 5,
      neighEvery: 1,
      device: 'cpu',
    }),
    (e: unknown) => isTandemError(e, 'TANDEM_ERR_UNSTABLE'),
  );
});

void test('priceOption through the runtime: European within 3 SE of Black–Scholes, split into tasks', async () => {
  const p = {
    spot: 95,
    strike: 100,
    rate: 0.03,
    vol: 0.3,
    maturity: 0.75,
    // Small enough that 3 tasks are within the per-task bound (risk/run.ts MAX_TASK_WORK_CPU).
    paths: 40_000,
    device: 'cpu' as const,
    tasks: 3,
  };
  const res = await priceOption(rt, p);
  const bs = blackScholes({ ...p, dividend: 0, right: 'call' });
  assert.equal(res.analytic, bs);
  assert.equal(res.tasks, 3);
  assert.equal(res.paths, 40_000);
  assert.ok(Math.abs(res.price - bs) < 3 * res.stdError, `${res.price} ± ${res.stdError} vs ${bs}`);
  // The same seed split differently gives the same estimate (counter-based streams).
  const again = await priceOption(rt, { ...p, tasks: 1 });
  assert.ok(Math.abs(again.price - res.price) < 1e-5 * res.price);
  const asian = await priceOption(rt, { ...p, type: 'asian', steps: 8, paths: 40_000 });
  assert.ok(asian.price > 0 && asian.price < bs);
  await assert.rejects(priceOption(rt, { vol: -0.1 }), (e: unknown) =>
    isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
  );
});

void test('portfolioVar through the runtime: VaR and ES of the example portfolio', async () => {
  const res = await portfolioVar(rt, {
    portfolio: EXAMPLE_PORTFOLIO,
    scenarios: 20_000,
    device: 'cpu',
    tasks: 2,
  });
  assert.equal(res.scenarios, 20_000);
  assert.ok(res.valueAtRisk > 0 && res.expectedShortfall > res.valueAtRisk, JSON.stringify(res));
  assert.ok(res.valueAtRisk < 0.5 * res.portfolioValue);
  await assert.rejects(
    portfolioVar(rt, {
      portfolio: { ...EXAMPLE_PORTFOLIO, positions: [{ type: 'future', asset: 'ACME', quantity: 1 }] },
    }),
    (e: unknown) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT') && /future/.test(e.message),
  );
});
