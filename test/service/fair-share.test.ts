/**
 * Issue 19, finding 3, through the service on the real CPU runtime: while tenant X keeps the CPU device
 * busy with gemm jobs of 64 panels (each job submits all its ~2-3 ms tasks at once), tenant Y's small
 * gemm job (POST /v1/jobs?wait) finishes within 2x its idle time (medians of a few runs, with a little
 * slack for this shared machine; bench/fair-share.ts makes the 100-run p99 figure). Without task-level
 * fair sharing (TANDEM_FAIR_SHARE=0) it waits behind X's burst; the metrics show each tenant's device
 * seconds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFairShare, summary } from '../../bench/fair-share.js';
import { isTandemError } from '../../src/core/errors.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { tenantRuntime } from '../../src/service/runner/tenant-share.js';

const common = {
  backends: ['cpu'],
  device: 'cpu',
  n: 192,
  // ~0.5-1 s of CPU work in 64 gemm panels plus fills; resubmitted for as long as Y measures. At n 1024
  // a faster CPU (AMD EPYC, 2026-12-05) drained X's burst so quickly that the control below (Y starved
  // without fair sharing) missed its margin by 0.2 ms; n 1280 roughly doubles the burst, one task stays short.
  xJob: { type: 'gemm', params: { n: 1280, panels: 64, dtype: 'f32', device: 'cpu', checkRows: 2 } },
  cpuThreads: 1,
  // Y is a short-job tenant (a pause between its jobs), not a second backlog: X's equal.
  gapMs: 100,
} as const;

void test(
  "a tenant's small job is not starved by another tenant's long job",
  { timeout: 240_000 },
  async (t) => {
    // Timing on a shared 2-core machine: a burst of unrelated load can spoil one measurement, so a
    // failing one is measured once more (both are printed); the bound itself is not loosened.
    let on: Awaited<ReturnType<typeof runFairShare>> | undefined;
    let idle = 0;
    let contended = 0;
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        on = await runFairShare({ ...common, fairShare: true, idleRuns: 9, runs: 9 });
      } catch (e) {
        if (e instanceof Error && /^no cpu device/.test(e.message)) {
          t.skip(e.message);
          return;
        }
        throw e;
      }
      idle = summary(on.idle).p50;
      contended = summary(on.contended).p50;
      t.diagnostic(
        `attempt ${attempt}: Y alone ${idle.toFixed(1)} ms, beside X ${contended.toFixed(1)} ms (medians)`,
      );
      if (contended <= 2 * idle + 15) break;
    }
    assert.ok(on);
    assert.ok(
      contended <= 2 * idle + 15,
      `with fair sharing: Y's job took ${contended.toFixed(1)} ms beside X (median) vs ${idle.toFixed(1)} ms alone`,
    );
    assert.ok((on.tenantDeviceSeconds['tenant-x'] ?? 0) > 0, JSON.stringify(on.tenantDeviceSeconds));
    assert.ok((on.tenantDeviceSeconds['tenant-y'] ?? 0) > 0, JSON.stringify(on.tenantDeviceSeconds));

    // The control, measured the same way (a second time when a burst of other load spoiled the first).
    let fifo = 0;
    let fifoIdle = 0;
    for (let attempt = 1; attempt <= 2; attempt++) {
      const off = await runFairShare({ ...common, fairShare: false, idleRuns: 3, runs: 9 });
      fifo = summary(off.contended).p50;
      fifoIdle = summary(off.idle).p50;
      t.diagnostic(
        `control ${attempt}: Y alone ${fifoIdle.toFixed(1)} ms, beside X without sharing ${fifo.toFixed(1)} ms`,
      );
      if (fifo > 2 * fifoIdle + 15 && fifo > contended) break;
    }
    assert.ok(
      fifo > 2 * fifoIdle + 15 && fifo > contended,
      `without fair sharing Y's job took ${fifo.toFixed(1)} ms beside X (median; alone ${fifoIdle.toFixed(1)} ms)`,
    );
  },
);

void test('each tenant gets one share view with its weight; TANDEM_FAIR_SHARE turns sharing off', async () => {
  const rt = await Runtime.create({ backends: [], calibrate: false, log: () => undefined });
  try {
    const a = tenantRuntime(rt, 'tenant-a', 2, true);
    assert.notEqual(a, rt);
    assert.equal(tenantRuntime(rt, 'tenant-a', 2, true), a, 'the same view for the same tenant and weight');
    assert.equal(rt.shareUsage().find((u) => u.share === 'tenant-a')?.weight, 2);
    const reweighted = tenantRuntime(rt, 'tenant-a', 5, true);
    assert.notEqual(reweighted, a);
    assert.equal(rt.shareUsage().find((u) => u.share === 'tenant-a')?.weight, 5);
    // A weight that is not a positive number counts as 1; sharing off or no runtime: the runtime as is.
    tenantRuntime(rt, 'tenant-b', Number.NaN, true);
    assert.equal(rt.shareUsage().find((u) => u.share === 'tenant-b')?.weight, 1);
    assert.equal(tenantRuntime(rt, 'tenant-c', 1, false), rt);
    assert.equal(tenantRuntime(null, 'tenant-c', 1, true), null);
  } finally {
    await rt.close();
  }
  assert.equal(loadServiceConfig({}, {}).fairShare, true);
  assert.equal(loadServiceConfig({ TANDEM_FAIR_SHARE: '0' }, {}).fairShare, false);
  assert.throws(
    () => loadServiceConfig({ TANDEM_FAIR_SHARE: 'yes' }, {}),
    (e: unknown) => isTandemError(e, 'TANDEM_ERR_CONFIG'),
  );
});
