/**
 * The placement rule per batch: the first listed kind present; with preferIdle the first present kind
 * with a device no job is using, as learned from task events tagged with a job (and not from the
 * lane's own tasks), busy while such a task runs and briefly after. The device list is written out
 * (a machine with a GPU is what the rule is for; this one has none).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { TaskEvent } from '../../src/obs/observer.js';
import type { ServiceRuntime } from '../../src/service/jobs/job-type.js';
import { JobDeviceUse, placeBatch, requirePlacement } from '../../src/service/serving/placement.js';

const devices = (...ids: [string, string][]) =>
  ({ devices: ids.map(([id, kind]) => ({ info: { id, kind } })) }) as unknown as ServiceRuntime;

function event(deviceId: string, tags: Record<string, string>): TaskEvent {
  return {
    taskId: 1,
    name: 'k',
    op: 'gemm',
    deviceId,
    queueId: 'q',
    submitUs: 0,
    readyUs: 0,
    startUs: 1,
    endUs: 2,
    ok: true,
    flops: 0,
    bytes: 0,
    tags,
  };
}

void test('placement: first present kind; preferIdle moves off devices that jobs use', async () => {
  const rt = devices(['cuda0', 'cuda'], ['cpu0', 'cpu']);
  const use = new JobDeviceUse();
  assert.equal(placeBatch({ kinds: ['webgpu', 'cuda', 'cpu'] }, rt, use), 'cuda');
  assert.equal(placeBatch({ kinds: ['webgpu'] }, rt, use), undefined, 'no listed kind present');
  assert.throws(
    () => requirePlacement({ kinds: ['webgpu'] }, rt, use),
    (e: unknown) =>
      isTandemError(e, 'TANDEM_ERR_DEVICE_ABSENT') &&
      /allows webgpu; this server has cuda, cpu/.test(e.message),
  );
  assert.equal(requirePlacement({ kinds: ['webgpu', 'cpu'] }, rt, use), 'cpu');
  const idleFirst = { kinds: ['cuda', 'cpu'] as const, preferIdle: true };
  assert.equal(placeBatch(idleFirst, rt, use), 'cuda');
  // The lane's own batches do not make a device busy.
  use.onTaskStart(event('cuda0', { model: 'm', version: '1' }));
  assert.equal(placeBatch(idleFirst, rt, use), 'cuda');
  use.onTaskStart(event('cuda0', { job: 'job_1', tenant: 't' }));
  assert.equal(placeBatch(idleFirst, rt, use), 'cpu', 'the GPU trains: serve on the CPU');
  assert.equal(
    placeBatch({ kinds: ['cuda', 'cpu'] }, rt, use),
    'cuda',
    'without preferIdle: always the first',
  );
  use.onTaskEnd(event('cuda0', { job: 'job_1', tenant: 't' }));
  assert.equal(placeBatch(idleFirst, rt, use), 'cpu', 'still busy just after (between a step’s kernels)');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(placeBatch(idleFirst, rt, use), 'cuda', 'free again');
  // Every listed kind busy: the first present one.
  use.onTaskStart(event('cuda0', { job: 'job_2' }));
  use.onTaskStart(event('cpu0', { job: 'job_3' }));
  assert.equal(placeBatch(idleFirst, rt, use), 'cuda');
});
