/**
 * Job types against the real Runtime on the CPU device: gemm (checked against float64), a Monte Carlo
 * option price and an MD run from src/workloads, plus a workload's own parameter validation at submit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuTestService, waitForJob } from './helpers.js';

void test('gemm, option and md jobs on the real CPU runtime', { timeout: 120_000 }, async (t) => {
  const s = await cpuTestService(t, {});
  if (!s) return;
  try {
    const submit = async (payload: object) =>
      s.svc.app.inject({ method: 'POST', url: '/v1/jobs', headers: s.auth(), payload });
    const bad = await submit({ type: 'md', params: { density: -1 } });
    assert.equal(bad.statusCode, 400);
    // Refused by md's published schema (made from the validator's own rules), naming the field.
    assert.match(bad.body, /params\/density must be > 0/);
    // A rule only the validator knows (the cutoff against the box) still comes back in its words.
    const tooSmall = await submit({ type: 'md', params: { cells: 2, cutoff: 2.5 } });
    assert.equal(tooSmall.statusCode, 400);
    assert.match(tooSmall.body, /md\.cutoff must be <= half the box/);
    const jobs = await Promise.all([
      submit({ type: 'gemm', params: { n: 96, panels: 2, dtype: 'f64' } }),
      // Inputs made and checked by the job's own CPU-worker kernels, in a 16-bit type too.
      submit({ type: 'gemm', params: { n: 80, panels: 3, dtype: 'bf16' } }),
      submit({ type: 'option', params: { paths: 50_000 } }),
      submit({ type: 'md', params: { preset: 'lj-small', steps: 20, thermoEvery: 10 } }),
    ]);
    for (const res of jobs) {
      assert.equal(res.statusCode, 202, res.body);
      const done = await waitForJob(s, (res.json() as { id: string }).id, s.admin, 100_000);
      assert.equal(done.state, 'succeeded', `${done['type'] as string}: ${JSON.stringify(done.error)}`);
    }
    const option = (
      await s.svc.app.inject({
        url: `/v1/jobs/${(jobs[2]!.json() as { id: string }).id}/result`,
        headers: s.auth(),
      })
    ).json() as {
      result: { price: number; analytic: number; stdError: number };
    };
    assert.ok(Math.abs(option.result.price - option.result.analytic) < 5 * option.result.stdError + 1e-9);
  } finally {
    await s.close();
  }
});
