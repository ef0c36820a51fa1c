import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { blackScholes, normalCdf } from '../../src/workloads/risk/black-scholes.js';
import { estimate, mcRange, mcSpec, streamCount, type McTerms } from '../../src/workloads/risk/mc.js';
import { validateOptionParams, validateVarParams } from '../../src/workloads/risk/params.js';
import {
  blockNormals,
  keyFromSeed,
  philox4x32,
  streamBlock,
  u32ToUniform,
} from '../../src/workloads/risk/philox.js';
import { cholesky, parsePortfolio } from '../../src/workloads/risk/portfolio.js';
import { riskFigures, scenarioLosses, portfolioValue } from '../../src/workloads/risk/var.js';

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function price(terms: McTerms): { price: number; stdError: number } {
  const spec = mcSpec(terms);
  return estimate(spec, mcRange(spec, 0, streamCount(spec)));
}

void test('Philox4x32-10 reproduces the Random123 known-answer vectors', () => {
  const kat: [number[], number[], number[]][] = [
    [
      [0, 0, 0, 0],
      [0, 0],
      [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
    ],
    [
      [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff],
      [0xffffffff, 0xffffffff],
      [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
    ],
    [
      [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
      [0xa4093822, 0x299f31d0],
      [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
    ],
  ];
  const out = new Uint32Array(4);
  for (const [c, k, expected] of kat) {
    philox4x32(c[0]!, c[1]!, c[2]!, c[3]!, k[0]!, k[1]!, out);
    assert.deepEqual(Array.from(out), expected);
  }
});

void test('uniforms are exact 24-bit values strictly inside (0, 1); normals have mean 0 and variance 1', () => {
  assert.equal(u32ToUniform(0), 2 ** -24);
  assert.equal(u32ToUniform(0xffffffff), 1 - 2 ** -24);
  assert.equal(Math.fround(u32ToUniform(0x9e3779b9)), u32ToUniform(0x9e3779b9));
  const key = keyFromSeed(2 ** 40 + 5);
  assert.deepEqual(key, { k0: 5, k1: 256 });
  const words = new Uint32Array(4);
  const z = new Float64Array(4);
  let s1 = 0;
  let s2 = 0;
  let s4 = 0;
  const n = 200_000;
  for (let i = 0; i < n / 4; i++) {
    streamBlock(key, i, 0, words);
    blockNormals(words, z);
    for (const v of z) {
      s1 += v;
      s2 += v * v;
      s4 += v ** 4;
    }
  }
  assert.ok(Math.abs(s1 / n) < 4 / Math.sqrt(n), `mean ${s1 / n}`);
  assert.ok(Math.abs(s2 / n - 1) < 4 * Math.sqrt(2 / n), `variance ${s2 / n}`);
  assert.ok(Math.abs(s4 / n - 3) < 4 * Math.sqrt(96 / n), `fourth moment ${s4 / n}`);
});

void test('normal CDF and Black–Scholes agree with reference values and put–call parity', () => {
  assert.ok(Math.abs(normalCdf(1) - 0.8413447460685429) < 1e-14);
  assert.ok(Math.abs(normalCdf(-2) - 0.022750131948179195) < 1e-15);
  assert.ok(Math.abs(normalCdf(3) - 0.9986501019683699) < 1e-14);
  const t = { spot: 100, strike: 100, rate: 0.05, vol: 0.2, maturity: 1, dividend: 0 };
  assert.ok(Math.abs(blackScholes({ ...t, right: 'call' }) - 10.450583572185565) < 1e-10);
  const u = { spot: 87, strike: 95, rate: 0.03, vol: 0.35, maturity: 0.7, dividend: 0.02 };
  const c = blackScholes({ ...u, right: 'call' });
  const p = blackScholes({ ...u, right: 'put' });
  assert.ok(Math.abs(c - p - (87 * Math.exp(-0.02 * 0.7) - 95 * Math.exp(-0.03 * 0.7))) < 1e-10);
});

void test('European Monte Carlo is within 3 standard errors of Black–Scholes for random parameters', () => {
  const rnd = lcg(2026);
  for (let trial = 0; trial < 12; trial++) {
    const spot = 50 + 100 * rnd();
    const terms: McTerms = {
      kind: 'european',
      right: rnd() < 0.5 ? 'call' : 'put',
      spot,
      // Strikes within 30% of spot keep the payoff non-degenerate (a deep out-of-the-money option
      // with every payoff 0 has no standard error to test against).
      strike: spot * (0.7 + 0.6 * rnd()),
      rate: 0.1 * rnd() - 0.02,
      vol: 0.05 + 0.6 * rnd(),
      maturity: 0.1 + 3 * rnd(),
      dividend: 0.05 * rnd(),
      steps: 1,
      paths: 100_000,
      antithetic: trial % 2 === 0,
      seed: 1000 + trial,
    };
    const mc = price(terms);
    const bs = blackScholes(terms);
    assert.ok(mc.stdError > 0);
    assert.ok(
      Math.abs(mc.price - bs) < 3 * mc.stdError,
      `trial ${trial}: MC ${mc.price} ± ${mc.stdError}, BS ${bs}`,
    );
  }
});

void test('antithetic variates lower the standard error at equal path count', () => {
  const terms: McTerms = {
    kind: 'european',
    right: 'call',
    spot: 100,
    strike: 100,
    rate: 0.05,
    vol: 0.2,
    maturity: 1,
    dividend: 0,
    steps: 1,
    paths: 100_000,
    antithetic: false,
    seed: 9,
  };
  const plain = price(terms);
  const anti = price({ ...terms, antithetic: true });
  assert.ok(anti.stdError < 0.8 * plain.stdError, `${anti.stdError} vs ${plain.stdError}`);
});

void test('arithmetic Asian call lies between the geometric closed form and the European price', () => {
  const m = 12;
  const t: McTerms = {
    kind: 'asian',
    right: 'call',
    spot: 100,
    strike: 100,
    rate: 0.05,
    vol: 0.3,
    maturity: 1,
    dividend: 0,
    steps: m,
    paths: 40_000,
    antithetic: true,
    seed: 4,
  };
  const mc = price(t);
  // Discretely monitored geometric average: log G is normal with these moments.
  const dt = t.maturity / m;
  const M = Math.log(t.spot) + (t.rate - 0.5 * t.vol ** 2) * dt * ((m + 1) / 2);
  const V = t.vol ** 2 * dt * (((m + 1) * (2 * m + 1)) / (6 * m));
  const d2 = (M - Math.log(t.strike)) / Math.sqrt(V);
  const geo =
    Math.exp(-t.rate * t.maturity) *
    (Math.exp(M + V / 2) * normalCdf(d2 + Math.sqrt(V)) - t.strike * normalCdf(d2));
  const eur = blackScholes({ ...t });
  assert.ok(mc.price > geo - 3 * mc.stdError, `asian ${mc.price} vs geometric ${geo}`);
  assert.ok(mc.price < geo * 1.1, `asian ${mc.price} should be near geometric ${geo}`);
  assert.ok(mc.price < eur, `asian ${mc.price} vs european ${eur}`);
});

void test('a stream range split gives the same estimate as one pass', () => {
  const spec = mcSpec({
    kind: 'asian',
    right: 'put',
    spot: 100,
    strike: 105,
    rate: 0.01,
    vol: 0.25,
    maturity: 2,
    dividend: 0,
    steps: 7,
    paths: 2001,
    antithetic: false,
    seed: 77,
  });
  const whole = mcRange(spec, 0, streamCount(spec));
  const a = mcRange(spec, 0, 700);
  const b = mcRange(spec, 700, streamCount(spec));
  assert.equal(a.count + b.count, 2001);
  assert.ok(Math.abs(a.sum + b.sum - whole.sum) < 1e-9 * whole.sum);
});

void test('VaR of a single stock matches the lognormal quantile; ES exceeds VaR', () => {
  const pf = parsePortfolio({
    rate: 0.02,
    assets: [{ name: 'X', spot: 100, vol: 0.3, drift: 0.05 }],
    positions: [{ type: 'stock', asset: 'X', quantity: 10 }],
  });
  const h = 10 / 252;
  const n = 100_000;
  const losses = new Float64Array(n);
  scenarioLosses(pf, h, 5, portfolioValue(pf, pf.spot, 0), 0, n, losses);
  const fig = riskFigures(losses, 0.99);
  const z01 = -2.3263478740408408; // Phi^-1(0.01)
  const exact = 1000 * (1 - Math.exp((0.05 - 0.045) * h + 0.3 * Math.sqrt(h) * z01));
  assert.ok(Math.abs(fig.valueAtRisk - exact) < 0.02 * exact, `VaR ${fig.valueAtRisk} vs ${exact}`);
  assert.ok(fig.expectedShortfall > fig.valueAtRisk);
});

void test('correlation: Cholesky reproduces the matrix; a non-positive-definite one is a clear error', () => {
  const c = [
    [1, 0.5, 0.2],
    [0.5, 1, -0.3],
    [0.2, -0.3, 1],
  ];
  const l = cholesky(c);
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) {
      let s = 0;
      for (let k = 0; k < 3; k++) s += l[i * 3 + k]! * l[j * 3 + k]!;
      assert.ok(Math.abs(s - c[i]![j]!) < 1e-14);
    }
  const assets = ['A', 'B', 'C'].map((name) => ({ name, spot: 10, vol: 0.2 }));
  const bad = {
    rate: 0,
    assets,
    correlation: [
      [1, 0.9, -0.9],
      [0.9, 1, 0.9],
      [-0.9, 0.9, 1],
    ],
    positions: [{ type: 'stock', asset: 'A', quantity: 1 }],
  };
  assert.throws(
    () => parsePortfolio(bad),
    (e: unknown) =>
      isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT') && /not positive definite/.test(e.message),
  );
});

void test('bad option and portfolio inputs are rejected with stable codes', () => {
  for (const p of [
    { vol: -0.2 },
    { spot: 0 },
    { paths: 0 },
    { type: 'bermudan' },
    { maturity: -1 },
    { steps: 0, type: 'asian' },
    { volatility: 0.2 },
  ]) {
    assert.throws(
      () => validateOptionParams(p),
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
      JSON.stringify(p),
    );
  }
  const assets = [{ name: 'A', spot: 10, vol: 0.2 }];
  const cases: unknown[] = [
    { rate: 0, assets, positions: [{ type: 'swaption', asset: 'A', quantity: 1 }] },
    { rate: 0, assets, positions: [{ type: 'stock', asset: 'Z', quantity: 1 }] },
    {
      rate: 0,
      assets: [{ name: 'A', spot: 10, vol: -0.2 }],
      positions: [{ type: 'stock', asset: 'A', quantity: 1 }],
    },
    { rate: 0, assets, positions: [] },
  ];
  for (const portfolio of cases) {
    assert.throws(
      () => validateVarParams({ portfolio }),
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
      JSON.stringify(portfolio),
    );
  }
  assert.throws(
    () => validateVarParams({ portfolio: cases[0] }),
    /swaption.*not a known instrument|not a known instrument/,
  );
});
