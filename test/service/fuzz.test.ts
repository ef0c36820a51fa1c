/**
 * Fuzz: thousands of random and mutated requests through inject(). The service must answer every one
 * with JSON (errors in the catalogue shape, never a 5xx), and every job it accepted must exist and end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { ERROR_CATALOGUE } from '../../src/core/errors.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { createTenant, testService } from './helpers.js';

const WEIRD: unknown[] = [
  null,
  true,
  -1,
  0,
  1e308,
  -0,
  2 ** 53,
  'x',
  '',
  '😀',
  [],
  {},
  [1, 2],
  { a: { b: { c: [] } } },
  'a'.repeat(300),
  NaN,
  3.5,
];

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
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
      const accepted = new Set<string>();
      const knownIds: string[] = ['job_00000000000000000000'];
      const validBody = (): Record<string, unknown> =>
        pick([
          { type: 'sleep', params: { ms: Math.floor(rand() * 3) } },
          { type: 'gemm', params: { n: 1 + Math.floor(rand() * 12) } },
          {
            type: 'gemm',
            params: { n: 4, dtype: pick(['f32', 'f64', 'f16', 'bf16']), panels: 2 },
            priority: Math.floor(rand() * 20) - 10,
          },
          { type: 'sleep', params: {}, idempotencyKey: `k${Math.floor(rand() * 50)}` },
        ]);
      const mutate = (b: Record<string, unknown>): unknown => {
        const c = structuredClone(b) as Record<string, unknown>;
        switch (Math.floor(rand() * 9)) {
          case 0:
            delete c[pick(Object.keys(c))];
            return c;
          case 1:
            c[pick(['type', 'params', 'priority', 'idempotencyKey', 'extra', '__proto__', 'constructor'])] =
              pick(WEIRD);
            return c;
          case 2:
            (c['params'] as Record<string, unknown>)[
              pick(['n', 'ms', 'dtype', 'panels', 'seed', 'device', 'steps', 'zzz'])
            ] = pick(WEIRD);
            return c;
          case 3:
            return pick(WEIRD);
          case 4:
            c['type'] = pick(['GEMM', 'gemm ', 'md', 'custom-kernel', '../etc', 'a'.repeat(40), 'sleep']);
            return c;
          case 5:
            (c['params'] as Record<string, unknown>)['n'] = pick([0, -5, 8193, 1e9, 1.5, 64]);
            return c;
          default:
            return c;
        }
      };
      let crashes = 0;
      const N = 3000;
      for (let i = 0; i < N; i++) {
        const r = rand();
        const auth =
          r < 0.05
            ? {}
            : r < 0.1
              ? { authorization: `Bearer ${pick(['', 'tdm_', 'tdm_zz_yy', user.slice(0, -1) + 'A'])}` }
              : t.auth(rand() < 0.5 ? user : t.admin);
        let req: InjectOptions;
        const kind = rand();
        if (kind < 0.55) {
          const body = rand() < 0.35 ? validBody() : mutate(validBody());
          const raw = JSON.stringify(body) ?? 'null';
          const payload =
            rand() < 0.08
              ? raw.slice(0, Math.floor(rand() * raw.length))
              : rand() < 0.02
                ? 'x'.repeat(20_000)
                : raw;
          const contentType =
            rand() < 0.05
              ? pick(['text/plain', 'application/xml', 'application/json; charset=utf-8', ''])
              : 'application/json';
          req = {
            method: 'POST',
            url: '/v1/jobs',
            headers: {
              ...auth,
              'content-type': contentType,
              ...(rand() < 0.1 ? { 'idempotency-key': `h${Math.floor(rand() * 20)}` } : {}),
            },
            payload,
          };
        } else {
          const id =
            rand() < 0.7
              ? pick(knownIds)
              : pick(['job_', 'job_zz', '..%2F..', 'job_' + 'f'.repeat(20), '%00', 'a'.repeat(500)]);
          const url = pick([
            `/v1/jobs/${id}`,
            `/v1/jobs/${id}/result`,
            `/v1/jobs/${id}/trace`,
            `/v1/jobs/${id}/cancel`,
            `/v1/jobs?limit=${pick(['1', '0', '-1', 'x', '99999', '50'])}&state=${pick(['queued', 'nope', 'succeeded'])}`,
            '/v1/devices',
            '/v1/stats',
            '/healthz',
            '/v1/tenants',
            '/nope',
            '/v1/jobs?before=abc',
            '/openapi.json',
          ]);
          req = {
            method: url.endsWith('/cancel') ? 'POST' : pick(['GET', 'GET', 'GET', 'DELETE', 'PUT', 'PATCH']),
            url,
            headers: auth,
          };
        }
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
        } else if (req.method === 'POST' && req.url === '/v1/jobs') {
          const id = (res.json() as { id: string }).id;
          accepted.add(id);
          knownIds.push(id);
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
