/**
 * The option pricer as a served model, on a real CPU runtime: prices against the Black–Scholes closed
 * form within Monte Carlo error, a price independent of its batch (and equal to the single-option job's
 * for the same seed), request validation with stable codes, and the factory's refusals.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../../src/core/errors.js';
import { Runtime } from '../../../src/runtime/runtime.js';
import { blackScholes } from '../../../src/workloads/risk/black-scholes.js';
import { europeanSpec, priceEuropeanBatch } from '../../../src/workloads/risk/batch.js';
import { priceOption } from '../../../src/workloads/risk/run.js';
import { optionPricerFactory } from '../../../src/service/serving/models/option-pricer.js';
import type { BatchContext, ModelSpec, ServedModel } from '../../../src/service/serving/model.js';

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface Option {
  right: 'call' | 'put';
  spot: number;
  strike: number;
  rate: number;
  vol: number;
  maturity: number;
  dividend: number;
  paths: number;
  antithetic: boolean;
  seed: number;
}

function randomOptions(n: number, seed: number, paths: number): Option[] {
  const r = lcg(seed);
  return Array.from({ length: n }, () => ({
    right: r() < 0.5 ? ('call' as const) : ('put' as const),
    spot: 80 + 40 * r(),
    strike: 80 + 40 * r(),
    rate: 0.08 * r(),
    vol: 0.1 + 0.4 * r(),
    maturity: 0.25 + 2 * r(),
    dividend: 0.03 * r(),
    paths: paths + Math.floor(7 * r()),
    antithetic: r() < 0.5,
    seed: Math.floor(r() * 2 ** 45),
  }));
}

const SPEC: ModelSpec = {
  name: 'pricer',
  version: 1,
  kind: 'option-pricer',
  config: { maxPaths: 4_000_000, defaultPaths: 50_000 },
  placement: { kinds: ['cpu'] },
};

void describe('option-pricer served model on a CPU runtime', () => {
  let rt: Runtime;
  let model: ServedModel;
  let ctx: BatchContext;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
    model = await optionPricerFactory.create(SPEC, rt);
    ctx = { rt, device: 'cpu', tags: { model: 'pricer', version: '1' } };
  });
  after(async () => {
    await model.unload();
    await rt.close();
  });

  void it('prices a batch of random options within Monte Carlo error of Black–Scholes', async () => {
    const options = randomOptions(12, 42, 200_000);
    const items = options.map((o) => model.parse(o));
    const got = await model.runBatch(items, ctx);
    assert.equal(got.length, options.length);
    got.forEach((g, i) => {
      assert.ok(!isTandemError(g), `item ${i} failed`);
      const out = g as { price: number; stdError: number; paths: number };
      const o = options[i]!;
      const want = blackScholes(o);
      assert.equal(out.paths, o.antithetic ? 2 * Math.ceil(o.paths / 2) : o.paths);
      assert.ok(
        out.stdError > 0 && out.stdError < 0.05 * Math.max(want, 1),
        `item ${i} stdError ${out.stdError}`,
      );
      assert.ok(
        Math.abs(out.price - want) <= 4.5 * out.stdError,
        `item ${i}: ${out.price} vs Black–Scholes ${want} (stdError ${out.stdError})`,
      );
    });
  });

  void it('gives an option the same price whichever batch (and however many tasks) it runs in', async () => {
    const [x, ...rest] = randomOptions(7, 9, 40_000);
    const spec = (o: Option) => europeanSpec(o);
    const alone = await priceEuropeanBatch(rt, [spec(x!)], { device: 'cpu' });
    const middle = await priceEuropeanBatch(
      rt,
      [...rest.slice(0, 3).map(spec), spec(x!), ...rest.slice(3).map(spec)],
      {
        device: 'cpu',
        tasks: 2,
      },
    );
    const other = await priceEuropeanBatch(rt, [spec(rest[5]!), spec(x!)], { device: 'cpu', tasks: 1 });
    assert.deepEqual(middle[3], alone[0]);
    assert.deepEqual(other[1], alone[0]);
  });

  void it('prices as the single-option job does for the same seed', async () => {
    // At most 4096 streams (a CPU task's share): the job runs as one task.
    const o = { ...randomOptions(1, 5, 30_000)[0]!, paths: 30_000, antithetic: true };
    const single = await priceOption(rt, { type: 'european', ...o, device: 'cpu' });
    assert.equal(single.tasks, 1, 'a one-task job, so its rows are the batch op rows');
    const [batched] = await model.runBatch([model.parse(o)], ctx);
    const b = batched as { price: number; stdError: number; paths: number };
    assert.equal(b.price, single.price);
    assert.equal(b.stdError, single.stdError);
    assert.equal(b.paths, single.paths);
  });

  void it('uses the configured default paths when a request gives none', async () => {
    const [out] = await model.runBatch([model.parse({ spot: 100, strike: 95 })], ctx);
    assert.equal((out as { paths: number }).paths, 50_000);
  });

  const bad: [string, unknown, string][] = [
    ['a negative vol', { vol: -0.2 }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['a zero spot', { spot: 0 }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['a strike that is a string', { strike: '100' }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['an unknown field', { volatility: 0.2 }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['a right that is neither call nor put', { right: 'straddle' }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['fractional paths', { paths: 1000.5 }, 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['more paths than the model allows', { paths: 8_000_000 }, 'TANDEM_ERR_LIMIT'],
    ['inputs that are not an object', [1, 2], 'TANDEM_ERR_INVALID_ARGUMENT'],
    ['no inputs at all', null, 'TANDEM_ERR_INVALID_ARGUMENT'],
  ];
  for (const [why, inputs, code] of bad) {
    void it(`parse rejects ${why} with ${code}`, () => {
      assert.throws(
        () => model.parse(inputs),
        (e: unknown) => isTandemError(e) && e.code === code,
      );
    });
  }

  void it('the factory refuses a WebGPU placement, a weights file and a bad config', async () => {
    const refusals: ModelSpec[] = [
      { ...SPEC, placement: { kinds: ['webgpu', 'cpu'] } },
      { ...SPEC, weightsPath: '/tmp/x.safetensors' },
      { ...SPEC, config: { maxPaths: 1 } },
      { ...SPEC, config: { maxPaths: 1000, defaultPaths: 5000 } },
      { ...SPEC, config: { paths: 10 } },
    ];
    for (const spec of refusals) {
      await assert.rejects(optionPricerFactory.create(spec, rt), (e: unknown) => {
        return isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT';
      });
    }
    assert.equal(model.maxBatchSize, 64);
    assert.equal(model.kind, 'option-pricer');
  });
});
