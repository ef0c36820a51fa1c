import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { createFcc, createVelocities, temperatureOf } from '../../src/workloads/md/lattice.js';
import { ljEnergyAllPairs, ljForces } from '../../src/workloads/md/lj.js';
import { buildNeighborList, wrapPositions } from '../../src/workloads/md/neighbor.js';
import { validateMdParams } from '../../src/workloads/md/params.js';
import { runLocal } from '../../src/workloads/md/simulate.js';
import { energyDrift } from '../../src/workloads/md/thermo.js';

/** Small deterministic generator for test inputs (not the Philox of the risk library, on purpose). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function close(actual: number, expected: number, tol: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected} (tolerance ${tol})`);
}

void test('lammps-lj matches the LAMMPS bench/in.lj log at steps 0 and 100 (32,000 atoms)', () => {
  // LAMMPS log.*.lj (1 proc): 0 1.44 -6.7733681 0 -4.6134356 -5.0197073 / 100 0.7574531 -5.7585055 0 -4.6223613 0.20726105
  const { thermo, state } = runLocal(validateMdParams({ preset: 'lammps-lj' }));
  assert.equal(state.n, 32000);
  const [s0, s100] = thermo;
  close(s0!.temp, 1.44, 1e-12, 'T(0)');
  close(s0!.epair, -6.7733681, 5e-8, 'E_pair(0)');
  close(s0!.toteng, -4.6134356, 5e-8, 'TotEng(0)');
  close(s0!.press, -5.0197073, 5e-8, 'Press(0)');
  assert.equal(s100!.step, 100);
  close(s100!.temp, 0.7574531, 1e-6, 'T(100)');
  close(s100!.epair, -5.7585055, 1e-6, 'E_pair(100)');
  close(s100!.toteng, -4.6223613, 1e-6, 'TotEng(100)');
  close(s100!.press, 0.20726105, 1e-5, 'Press(100)');
});

void test('velocities: zero total momentum and exactly the target temperature (3N-3 dof)', () => {
  const state = createFcc({ cells: [4, 4, 4], density: 0.8442 });
  createVelocities(state, 2.5, 12345);
  const p = [0, 0, 0];
  for (let i = 0; i < state.n; i++) for (let d = 0; d < 3; d++) p[d]! += state.v[3 * i + d]!;
  for (const c of p) close(c, 0, 1e-12, 'momentum');
  close(temperatureOf(state.v), 2.5, 1e-12, 'T');
});

void test('forces equal minus the finite-difference gradient of the energy', () => {
  const cells: [number, number, number] = [4, 4, 4];
  const state = createFcc({ cells, density: 0.8442 });
  const rnd = lcg(7);
  for (let i = 0; i < state.x.length; i++) state.x[i]! += 0.2 * (rnd() - 0.5);
  wrapPositions(state.x, state.box);
  const cutoff = 2.5;
  // Shifted energy is continuous at the cutoff, so a pair crossing it during the +-h probe cannot spoil
  // the difference quotient; the forces are the same as unshifted.
  const list = buildNeighborList(state.x, state.box, cutoff + 0.3, true);
  ljForces(state.x, state.f, state.box, list, cutoff, true);
  const h = 1e-5;
  let maxErr = 0;
  for (const k of [0, 1, 2, 100, 301, 575, 767]) {
    const x0 = state.x[k]!;
    state.x[k] = x0 + h;
    const ep = ljEnergyAllPairs(state.x, state.box, cutoff, true);
    state.x[k] = x0 - h;
    const em = ljEnergyAllPairs(state.x, state.box, cutoff, true);
    state.x[k] = x0;
    const fd = -(ep - em) / (2 * h);
    assert.ok(Math.abs(state.f[k]!) > 1e-3, 'probe a component with a non-trivial force');
    maxErr = Math.max(maxErr, Math.abs(fd - state.f[k]!) / Math.max(1, Math.abs(fd)));
  }
  assert.ok(maxErr < 1e-6, `relative force error ${maxErr}`);
});

void test('neighbour-list energy equals the all-pairs energy; full list has twice the pairs', () => {
  const state = createFcc({ cells: [4, 5, 6], density: 0.7 });
  const rnd = lcg(3);
  for (let i = 0; i < state.x.length; i++) state.x[i]! += 0.3 * (rnd() - 0.5);
  wrapPositions(state.x, state.box);
  const half = buildNeighborList(state.x, state.box, 2.8, true);
  const full = buildNeighborList(state.x, state.box, 2.8, false);
  assert.equal(full.pairs, 2 * half.pairs);
  const { pe } = ljForces(state.x, state.f, state.box, half, 2.5, false);
  close(pe, ljEnergyAllPairs(state.x, state.box, 2.5, false), 1e-9 * Math.abs(pe), 'energy');
  let fsum = 0;
  for (let i = 0; i < state.n; i++) fsum += state.f[3 * i]!;
  close(fsum, 0, 1e-9, 'total force');
});

void test('total energy is conserved over 10,000 steps (256 atoms)', (t) => {
  // Shifted potential: with the plain cutoff each pair crossing rc changes E by E(rc), a random walk that
  // would hide the integrator's own drift. Rebuilding whenever an atom moved skin/2 misses no pair.
  const config = validateMdParams({
    preset: 'lj-small',
    cells: 4,
    steps: 10_000,
    thermoEvery: 500,
    neighEvery: 1,
    neighCheck: true,
    shift: true,
  });
  const { thermo, stats } = runLocal(config);
  const drift = energyDrift(thermo);
  t.diagnostic(
    `energy drift over 10,000 steps: relative ${drift.relative.toExponential(2)}, max excursion ${drift.maxExcursion.toExponential(2)}; ${stats.neighborBuilds} list builds, ${stats.dangerousBuilds} dangerous`,
  );
  assert.equal(stats.dangerousBuilds, 0);
  assert.ok(Math.abs(drift.relative) < 2e-3, `relative drift ${drift.relative}`);
  assert.ok(drift.maxExcursion < 5e-3, `max excursion ${drift.maxExcursion}`);
});

void test('a run that blows up stops with TANDEM_ERR_UNSTABLE naming the step', () => {
  const config = validateMdParams({ cells: 4, temperature: 1e6, dt: 0.5, steps: 50, neighEvery: 1 });
  assert.throws(
    () => runLocal(config),
    (e: unknown) =>
      isTandemError(e, 'TANDEM_ERR_UNSTABLE') &&
      typeof e.details.step === 'number' &&
      /at step \d+/.test(e.message),
  );
});

void test('impossible MD parameters are rejected before running', () => {
  const bad: Record<string, unknown>[] = [
    { density: -0.8 },
    { density: 0 },
    { temperature: -1 },
    { steps: 0 },
    { cells: 3, cutoff: 2.6 },
    { cells: 4, cutoff: 3.3, skin: 0.3 },
    { dt: 0 },
    { cells: [4, 4] },
    { temprature: 1 },
    { preset: 'nope' },
    { atoms: 1e12 },
  ];
  for (const p of bad) {
    assert.throws(
      () => validateMdParams(p),
      (e: unknown) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
      JSON.stringify(p),
    );
  }
  const ok = validateMdParams({ atoms: 4_000_000, steps: 10 });
  assert.deepEqual(ok.cells, [100, 100, 100]);
});
