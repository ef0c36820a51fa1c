/**
 * md, option and var jobs on the real CPU runtime have timelines as rich as gemm's: their tasks are
 * tagged with the job, so the job's trace holds a span per task on the device's queue tracks, the job
 * records the device its tasks ran on, and progress is reported as the tasks (option, var) or the steps
 * (md) complete, ending at 1 with a message the dashboard shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobContext } from '../../src/service/jobs/job-type.js';
import { EXAMPLE_PORTFOLIO } from '../../src/workloads/index.js';
import { cpuTestService, waitForJob } from './helpers.js';

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  tid: number;
  args?: Record<string, unknown>;
}

const JOBS = [
  {
    type: 'md',
    params: { preset: 'lj-small', steps: 12, thermoEvery: 6 },
    task: /^(lj_forces|integrate[12]|md_neighbors)@/,
  },
  { type: 'option', params: { paths: 40_000, tasks: 4 }, task: /^mc_european\[/ },
  { type: 'var', params: { portfolio: EXAMPLE_PORTFOLIO, scenarios: 4000, tasks: 3 }, task: /^mc_var\[/ },
] as const;

void test(
  'md, option and var: task spans in the trace, the device they ran on, progress to 1',
  { timeout: 180_000 },
  async (t) => {
    const s = await cpuTestService(t, {});
    if (!s) return;
    try {
      for (const spec of JOBS) {
        const sub: { statusCode: number; body: string; json(): unknown } = await s.svc.app.inject({
          method: 'POST',
          url: '/v1/jobs',
          headers: s.auth(),
          payload: { type: spec.type, params: spec.params },
        });
        assert.equal(sub.statusCode, 202, sub.body);
        const id = (sub.json() as { id: string }).id;
        const job = await waitForJob(s, id, s.admin, 120_000);
        assert.equal(job.state, 'succeeded', `${spec.type}: ${JSON.stringify(job.error)}`);
        assert.match(String(job['device']), /^cpu\d+$/, `${spec.type} ran on ${String(job['device'])}`);
        const trace = (await s.svc.app.inject({ url: `/v1/jobs/${id}/trace`, headers: s.auth() })).json() as {
          traceEvents: TraceEvent[];
        };
        const tracks = new Map<number, string>();
        for (const e of trace.traceEvents)
          if (e.ph === 'M' && e.name === 'thread_name') tracks.set(e.tid, String(e.args?.['name']));
        const tasks = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'task');
        assert.ok(tasks.length > 0, `${spec.type}: no task spans`);
        assert.ok(
          tasks.every((e) => spec.task.test(e.name)),
          `${spec.type}: ${tasks.map((e) => e.name).join(', ')}`,
        );
        assert.ok(tasks.every((e) => e.args?.['job'] === id));
        // On the device's queue tracks, not the job's own track.
        assert.ok(tasks.every((e) => !String(tracks.get(e.tid)).startsWith('job ')));
        if (spec.type === 'option') assert.equal(tasks.length, 4);
        if (spec.type === 'var') assert.equal(tasks.length, 3);
        if (spec.type === 'md') assert.ok(tasks.length >= 12 * 3, `md: ${tasks.length} task spans`);
      }

      // Progress as the job context sees it, straight from the job types' run().
      for (const spec of JOBS) {
        const type = s.svc.registry.get(spec.type);
        const calls: [number, string][] = [];
        const ctx: JobContext<unknown> = {
          jobId: `job_progress_${spec.type}`,
          tenantId: 't',
          attempt: 1,
          params: type.parse(spec.params),
          signal: new AbortController().signal,
          rt: s.rt,
          placement: { device: undefined, reason: 'test' },
          tags: { job: `job_progress_${spec.type}` },
          progress: (f, m = '') => calls.push([f, m]),
          span: () => undefined,
        };
        await type.run(ctx);
        assert.ok(calls.length >= 3, `${spec.type}: ${JSON.stringify(calls)}`);
        for (let i = 1; i < calls.length; i++)
          assert.ok(
            calls[i]![0] >= calls[i - 1]![0],
            `${spec.type} progress went back: ${JSON.stringify(calls)}`,
          );
        const last = calls.at(-1)!;
        assert.equal(last[0], 1);
        const expected = { md: 'step 12/12', option: 'task 4/4', var: 'task 3/3' }[spec.type];
        assert.equal(last[1], expected);
        assert.ok(
          calls.some(([f]) => f > 0 && f < 1),
          `${spec.type}: no intermediate progress`,
        );
      }
    } finally {
      await s.close();
    }
  },
);
