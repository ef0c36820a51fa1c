/**
 * Every registered job type's estimates are finite, non-negative numbers for every parameter shape the
 * submit route accepts (issue 19: an md job with `"cells": [8, 8, 8]` was accepted with a NaN memory
 * estimate, whose insert then failed its whole group commit). The samples go through the real route
 * (schema, then the type's own parse); each type's raw `memoryBytes` is recorded before the service's
 * guard sees it, so a type that answers NaN for accepted parameters fails here, not only at submit.
 * The job type contract has no other estimate (no cost model) on this branch; a new one belongs here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRandom } from '../../src/core/seeded-random.js';
import { DEFAULT_CONFIG, loadServiceConfig } from '../../src/service/config.js';
import { registerBuiltinJobTypes } from '../../src/service/jobs/builtin.js';
import type { AnyJobType } from '../../src/service/jobs/job-type.js';
import { JobTypeRegistry } from '../../src/service/jobs/registry.js';
import { GEMM_MAX_N } from '../../src/service/jobs/types/gemm.js';
import { createService } from '../../src/service/service.js';
import { EXAMPLE_PORTFOLIO } from '../../src/workloads/index.js';
import { tempDir } from './helpers.js';

type Params = Record<string, unknown>;

/** Per type: a minimal accepted base, and values for each field (bounds, arrays vs numbers, presets). */
interface Samples {
  readonly base: Params;
  readonly fields: Readonly<Record<string, readonly unknown[]>>;
}

const MAX_CELLS = 256;
const BIG = 1 << 26; // custom-kernel's element limit

const SAMPLES: Readonly<Record<string, Samples>> = {
  sleep: { base: {}, fields: { ms: [0, 1, 600_000, 600_001, -1], steps: [1, 1000, 1001] } },
  gemm: {
    base: { n: 4 },
    fields: {
      n: [1, 2, 1024, GEMM_MAX_N, GEMM_MAX_N + 1, 0],
      dtype: ['f32', 'f64', 'f16', 'bf16'],
      panels: [1, 4, 64, 65],
      seed: [0, 2 ** 31 - 1],
      checkRows: [1, 64],
      device: ['cpu', 'cuda0'],
    },
  },
  'custom-kernel': {
    base: {
      language: 'cuda',
      source: 'extern "C" __global__ void k(float* y) {}',
      entry: 'k',
      tensors: [{ name: 'y', shape: [4], dtype: 'f32', mode: 'w' }],
      grid: [1],
    },
    fields: {
      language: ['cuda', 'wgsl'],
      tensors: [
        [{ name: 'y', shape: [1], dtype: 'u8', mode: 'rw' }],
        [{ name: 'y', shape: [BIG], dtype: 'f64', mode: 'w' }],
        [{ name: 'y', shape: [8192, 8192], dtype: 'f32', mode: 'w' }],
        [{ name: 'y', shape: [BIG, BIG], dtype: 'f32', mode: 'w' }],
        [{ name: 'y', shape: [2, 3, 4, 5], dtype: 'i32', mode: 'w', init: 'range' }],
        [
          { name: 'x', shape: [BIG / 2], dtype: 'f32', mode: 'r' },
          { name: 'y', shape: [BIG / 2], dtype: 'f32', mode: 'w' },
        ],
      ],
      grid: [[1], [65535, 65535, 64], [2_147_483_647]],
      block: [[1], [1024, 1, 1]],
      params: [[], [{ type: 'f32', value: 1.5 }], [{ tensor: 'y' }]],
      seed: [0, 4_294_967_295],
    },
  },
  md: {
    base: {},
    fields: {
      preset: ['lammps-lj', 'lj-small', 'nope'],
      cells: [
        1,
        4,
        8,
        20,
        MAX_CELLS,
        MAX_CELLS + 1,
        [8, 8, 8],
        [4, 5, 6],
        [MAX_CELLS, MAX_CELLS, MAX_CELLS],
        [1, 1, 1],
        [8, 8],
        [8.5, 8, 8],
        '8',
      ],
      atoms: [4, 500, 32_000, 4 * MAX_CELLS ** 3, 4 * MAX_CELLS ** 3 + 1, 3],
      density: [0.01, 0.8442, 10],
      steps: [1, 1e9],
      thermoEvery: [1, 100],
      cutoff: [0.5, 2.5],
      skin: [0, 0.3],
      device: ['auto', 'cpu', 'cuda', 'webgpu'],
      precision: ['f64', 'f32'],
    },
  },
  option: {
    base: {},
    fields: {
      type: ['european', 'asian'],
      paths: [2, 1_000_000, 2 ** 40, 2 ** 40 + 1],
      steps: [1, 100_000],
      tasks: [1, 65_536],
      antithetic: [true, false],
      seed: [0, Number.MAX_SAFE_INTEGER],
      maturity: [1e-9, 100],
      vol: [1e-9, 10],
    },
  },
  var: {
    base: { portfolio: EXAMPLE_PORTFOLIO },
    fields: {
      scenarios: [100, 2 ** 31],
      tasks: [1, 65_536],
      horizon: [1e-9, 10],
      confidence: [0.51, 0.999999],
      device: ['auto', 'cpu'],
    },
  },
  train: {
    base: { model: 'gpt' },
    fields: {
      model: ['mlp', 'cnn', 'gpt'],
      preset: ['gpt-micro', 'gpt-mini', 'gpt2', 'gpt2-medium'],
      batch: [1, 65_536, 65_537],
      seqLen: [1, 1024, 65_536],
      precision: ['f32', 'bf16', 'f16'],
      steps: [1, 10_000_000],
      dataset: ['brown', 'fashion-mnist'],
    },
  },
};

/** The base, the base with each field value alone, and seeded random combinations of field values. */
function* variations(s: Samples, random: () => number, combos: number): Generator<Params> {
  yield s.base;
  const keys = Object.keys(s.fields);
  for (const k of keys) for (const v of s.fields[k]!) yield { ...s.base, [k]: v };
  for (let i = 0; i < combos; i++) {
    const p: Params = { ...s.base };
    for (const k of keys) {
      const vs = s.fields[k]!;
      if (random() < 0.5) p[k] = vs[Math.floor(random() * vs.length)];
    }
    yield p;
  }
}

void test('every job type: memory estimates are finite and non-negative for every accepted shape', async () => {
  const real = new JobTypeRegistry();
  await registerBuiltinJobTypes(real);
  // The same types with their raw estimate recorded (before the service's guard sees it).
  const seen = new Map<string, { params: unknown; bytes: unknown }[]>();
  const spied = new JobTypeRegistry();
  for (const t of real.list()) {
    const log: { params: unknown; bytes: unknown }[] = [];
    seen.set(t.name, log);
    const spy: AnyJobType = {
      ...t,
      memoryBytes(p) {
        const bytes = t.memoryBytes(p);
        log.push({ params: p, bytes });
        return bytes;
      },
    };
    spied.register(spy);
  }
  const missing = real.list().filter((t) => !(t.name in SAMPLES));
  assert.deepEqual(
    missing.map((t) => t.name),
    [],
    'every registered job type has samples here',
  );

  const dir = tempDir();
  const config = loadServiceConfig(
    {},
    {
      dataDir: dir,
      logLevel: 'silent',
      durability: 'normal',
      rateLimitPerSec: 1e6,
      rateLimitBurst: 1e6,
      quotas: {
        ...DEFAULT_CONFIG.quotas,
        maxConcurrentJobs: 1,
        maxDeviceMemoryBytes: 2 ** 50,
        maxQueuedJobs: 1e6,
      },
    },
  );
  // No runtime: accepted jobs stay queued behind "no device" (nothing runs; only the estimates matter).
  const svc = await createService(config, { runtime: null, registry: spied });
  try {
    const auth = { authorization: `Bearer ${svc.bootstrapKey!.key}` };
    const random = seededRandom(19);
    for (const t of real.list()) {
      let accepted = 0;
      let rejected = 0;
      for (const params of variations(SAMPLES[t.name]!, random, 300)) {
        const res = await svc.app.inject({
          method: 'POST',
          url: '/v1/jobs',
          headers: auth,
          payload: { type: t.name, params },
        });
        assert.ok(
          res.statusCode < 500,
          `${t.name} ${JSON.stringify(params)} → ${res.statusCode} ${res.body}`,
        );
        if (res.statusCode === 202) accepted++;
        else if (res.body.includes('TANDEM_ERR_DEVICE_ABSENT')) {
          // Valid, but refused here for want of its device (custom-kernel needs a GPU; this service has
          // none): estimate it as the route would have.
          spied.get(t.name).memoryBytes(t.parse(params));
          accepted++;
        } else rejected++;
      }
      const estimates = seen.get(t.name)!;
      assert.ok(accepted >= 5, `${t.name}: ${accepted} samples accepted (${rejected} refused)`);
      // Estimated once each validation passed: every accepted sample, and any refused by the guard.
      assert.ok(estimates.length >= accepted, `${t.name}: every accepted sample was estimated`);
      for (const { params, bytes } of estimates)
        assert.ok(
          typeof bytes === 'number' && Number.isFinite(bytes) && bytes >= 0,
          `${t.name} ${JSON.stringify(params)}: memory estimate ${String(bytes)}`,
        );
    }
  } finally {
    await svc.close();
  }
});
