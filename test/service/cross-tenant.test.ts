/**
 * Cross-tenant isolation under fuzzing (issue 19): one tenant sends the service's fuzz corpus while 20
 * other tenants submit 10,000 normal jobs, interleaved so that the fuzzer's requests share event-loop
 * turns — and so group commits — with theirs. Not one of the others' submissions may be affected:
 * each is answered 202, stored, and runs to `succeeded`.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { seededRandom } from '../../src/core/seeded-random.js';
import { DEFAULT_CONFIG } from '../../src/service/config.js';
import { fuzzer } from './fuzz-corpus.js';
import { createTenant, testService } from './helpers.js';

const OTHER_SUBMITS = 10_000;
const OTHER_TENANTS = 20;
/** Per turn: 20 normal submissions and 6 fuzz requests (every 4th from the 2nd), sent before any answer. */
const NORMAL_PER_TURN = 20;
const FUZZ_PER_TURN = 6;

void test(
  'cross-tenant: the fuzz corpus interleaved with 10,000 other tenants’ submits affects none of them',
  { timeout: 300_000 },
  async (tc: TestContext) => {
    const t = await testService({
      maxRunningJobs: 4,
      rateLimitPerSec: 1e6,
      rateLimitBurst: 1e6,
      bodyLimitBytes: 64 * 1024,
      // The 20 tenants submit 10,000 jobs as fast as the service answers, faster than a slow or busy
      // machine drains them: load shedding then refuses their own flood (on the 2-core VM at load 9-14:
      // 7,650 refused for event-loop delay, "this tenant submits 22 jobs/s against its share of 10.5
      // jobs/s drained"; with that rule off, 7,517 for the backlog, "the queue holds 1022 jobs (budget
      // 1000, 10 s at 81.5 jobs/s); this tenant has 47 of its share of 47"). That is shedding doing its
      // job (overload.test.ts, load-shedder.test.ts, early-refusal.test.ts), not an effect of the
      // fuzzer, which is what this test isolates.
      shed: { ...DEFAULT_CONFIG.shed, enabled: false },
    });
    try {
      const others: string[] = [];
      for (let i = 0; i < OTHER_TENANTS; i++) others.push(await createTenant(t, `tenant${i}`));
      const fuzzKey = await createTenant(t, 'fuzzer');
      // The fuzzer is a tenant like the others: its own key, and bad keys (never the admin's).
      const corpus = fuzzer(seededRandom(1919), { user: fuzzKey, other: fuzzKey });
      const t0 = performance.now();
      const otherIds: string[] = [];
      const affected: string[] = [];
      let fuzzRequests = 0;
      let fuzz5xx = 0;
      const groupsBefore = t.svc.submitter.groups;
      for (let sent = 0; sent < OTHER_SUBMITS;) {
        const turn: Promise<{ mine: boolean; res: LightMyRequestResponse }>[] = [];
        for (let k = 0; k < NORMAL_PER_TURN + FUZZ_PER_TURN; k++) {
          // The fuzz requests spread through the turn, between the others' submissions.
          if (k % 4 === 1) {
            fuzzRequests++;
            turn.push(t.svc.app.inject(corpus.next()).then((res) => ({ mine: false, res })));
            continue;
          }
          if (sent >= OTHER_SUBMITS) continue;
          const key = others[sent % OTHER_TENANTS]!;
          sent++;
          turn.push(
            t.svc.app
              .inject({
                method: 'POST',
                url: '/v1/jobs',
                headers: { authorization: `Bearer ${key}` },
                payload: { type: 'sleep', params: { ms: 0 } },
              })
              .then((res) => ({ mine: true, res })),
          );
        }
        for (const { mine, res } of await Promise.all(turn)) {
          if (!mine) {
            if (res.statusCode >= 500) fuzz5xx++;
            if (res.statusCode === 202 && String(res.headers['content-type']).includes('json'))
              corpus.accepted((res.json() as { id: string }).id);
            continue;
          }
          if (res.statusCode !== 202) affected.push(`${res.statusCode} ${res.body.slice(0, 200)}`);
          else otherIds.push((res.json() as { id: string }).id);
        }
      }
      const groups = t.svc.submitter.groups - groupsBefore;
      const submitSeconds = (performance.now() - t0) / 1000;
      // Every accepted job of the other tenants is stored and ends succeeded.
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        const c = t.svc.store.countsByState();
        if (c.queued + c.running === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const id of otherIds) {
        const job = t.svc.store.get(id);
        if (job?.state !== 'succeeded') affected.push(`${id}: ${job?.state ?? 'not stored'}`);
      }
      tc.diagnostic(
        `${affected.length} of ${OTHER_SUBMITS} other tenants' submits affected; ${fuzzRequests} fuzz requests ` +
          `(${fuzz5xx} answered 5xx) interleaved in ${groups} group commits; submitted in ${submitSeconds.toFixed(1)} s, ` +
          `all ended in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
      assert.deepEqual(affected.slice(0, 5), [], `${affected.length} affected`);
      assert.equal(otherIds.length, OTHER_SUBMITS);
      assert.equal(fuzz5xx, 0, 'the fuzzer itself never gets a 5xx');
      // The point: the fuzzer's requests shared group commits with the others'.
      assert.ok(groups < (OTHER_SUBMITS + fuzzRequests) / 10, `${groups} group commits`);
    } finally {
      await t.close();
    }
  },
);
