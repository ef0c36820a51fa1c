/**
 * Fuzz: thousands of random and mutated requests through inject(). The service must answer every one
 * with JSON (errors in the catalogue shape, never a 5xx), and every job it accepted must exist and end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CATALOGUE } from '../../src/core/errors.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { fuzzer } from './fuzz-corpus.js';
import { createTenant, testService } from './helpers.js';

void test(
  'fuzz: random and mutated requests never crash the service or lose an accepted job',
  { timeout: 120_000 },
  async () => {
    const t = await testService({
      maxRunningJobs: 2,
      rateLimitPerSec: 1e6,
      rateLimitBurst: 1e6,
      bodyLimitBytes: 16 * 1024,
    });
    try {
      const user = await createTenant(t, 'fuzzer');
      const rand = seededRandom(12345);
      const accepted = new Set<string>();
      const corpus = fuzzer(rand, { user, other: t.admin });
      let crashes = 0;
      const N = 3000;
      for (let i = 0; i < N; i++) {
        const req = corpus.next();
        const res = await t.svc.app.inject(req);
        if (res.statusCode >= 500) {
          crashes++;
          assert.fail(`${req.method} ${req.url} → ${res.statusCode} ${res.body.slice(0, 300)}`);
        }
        if (res.statusCode >= 400) {
          const body = res.json() as { error?: { code?: string; message?: string } };
          assert.ok(
            body.error?.code && body.error.code in ERROR_CATALOGUE,
            `${req.method} ${req.url} → ${res.statusCode} ${res.body.slice(0, 200)}`,
          );
          assert.ok(typeof body.error.message === 'string' && body.error.message.length > 0);
        } else if (req.method === 'POST' && /^\/v1\/jobs(\?|$)/.test(String(req.url))) {
          const id = (res.json() as { id: string }).id;
          accepted.add(id);
          corpus.accepted(id);
        }
      }
      assert.equal(crashes, 0);
      assert.ok(accepted.size > 200, `accepted ${accepted.size}`);
      // Every accepted job exists and reaches a final state.
      const deadline = Date.now() + 60_000;
      for (const id of accepted) {
        for (;;) {
          const job = t.svc.store.get(id);
          assert.ok(job, `accepted job ${id} is stored`);
          if (['succeeded', 'failed', 'cancelled'].includes(job.state)) break;
          assert.ok(Date.now() < deadline, `job ${id} still ${job.state}`);
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      const health = await t.svc.app.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 200);
    } finally {
      await t.close();
    }
  },
);
