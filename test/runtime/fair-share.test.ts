/**
 * Fair sharing of devices between share groups (rt.submit's `share`, rt.withShare): a free worker
 * takes the next task of the group most behind in device time per weight, and a group's backlog does
 * not sit in the device queue ahead of the others. On the real CPU runtime with one worker, with a
 * custom kernel of known length.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTandemError } from '../../src/core/errors.js';
import type { KernelDef } from '../../src/kernels/kernel.js';
import { simBackend } from '../../src/devices/sim/backend.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { TaskHandle } from '../../src/runtime/task.js';
import { cpuRuntime } from './helpers.js';

const customModule = new URL('./fixtures/custom-kernels.js', import.meta.url).href;
const spinDef: KernelDef = {
  name: 'spin',
  args: [],
  validate: () => undefined,
  cost: () => ({ flops: 0, bytes: 0 }),
};

async function oneWorkerRuntime(): Promise<Runtime> {
  const rt = await cpuRuntime({ options: { cpu: { threads: 1 } } });
  rt.registerKernel(spinDef, { cpu: { module: customModule, export: 'spin' } });
  // Warm the worker's module load so the first measured task is not the import.
  await rt.submit({ kernel: 'spin', scalars: { us: 100 } }).done;
  return rt;
}

/**
 * The late group first works alone for a while (200 ms of device time), then the other group submits
 * a backlog of 150 spins of 4 ms, then the late group one more: how long that one waits.
 */
async function lateTaskWait(rt: Runtime, shared: boolean): Promise<number> {
  const early: TaskHandle[] = [];
  for (let i = 0; i < 50; i++)
    early.push(rt.submit({ kernel: 'spin', scalars: { us: 4000 }, ...(shared ? { share: 'y' } : {}) }));
  await Promise.all(early.map((t) => t.done));
  const backlog: TaskHandle[] = [];
  for (let i = 0; i < 150; i++)
    backlog.push(rt.submit({ kernel: 'spin', scalars: { us: 4000 }, ...(shared ? { share: 'x' } : {}) }));
  await new Promise((r) => setTimeout(r, 30));
  const t0 = performance.now();
  await rt.submit({ kernel: 'spin', scalars: { us: 4000 }, ...(shared ? { share: 'y' } : {}) }).done;
  const waited = performance.now() - t0;
  await Promise.all(backlog.map((t) => t.done));
  return waited;
}

test("a group's short task does not wait behind another group's backlog (and does without groups)", async () => {
  const rt = await oneWorkerRuntime();
  try {
    const unshared = await lateTaskWait(rt, false);
    const shared = await lateTaskWait(rt, true);
    // Without groups, FIFO: behind ~140 tasks of 4 ms (~560 ms). With them: behind the newcomer's
    // credit (FAIR_CREDIT_US, 50 ms: it was idle while the late group worked alone), the task running
    // and its own 4 ms; the bound leaves room for a loaded 2-core machine.
    assert.ok(unshared > 300, `without share groups the late task waited ${unshared.toFixed(0)} ms`);
    assert.ok(shared < 100, `with share groups the late task waited ${shared.toFixed(0)} ms`);
    const usage = new Map(rt.shareUsage().map((u) => [u.share, u]));
    assert.equal(usage.get('x')?.tasks, 150);
    assert.equal(usage.get('y')?.tasks, 51);
    assert.ok(usage.get('x')!.deviceSeconds > 0.5, `x used ${usage.get('x')!.deviceSeconds} s`);
    assert.equal(usage.get('x')?.running, 0);
    assert.equal(usage.get('x')?.pending, 0);
  } finally {
    await rt.close();
  }
});

test('a newcomer does not wait behind a deep device queue that another group filled alone', async () => {
  // A GPU-like device whose in-order queue takes 256 launches, tasks of 2 ms in wall time.
  const paced = { bandwidth: 1e10, latencyUs: 5 };
  const sim = simBackend({
    devices: [{ id: 'gpu0', depth: 256, opUs: { noop: 2000 } }],
    compute: false,
    paced,
  });
  const rt = await Runtime.create({ backends: [sim], calibrate: false, log: () => undefined });
  try {
    const wait = async (shared: boolean): Promise<number> => {
      const backlog: TaskHandle[] = [];
      for (let i = 0; i < 200; i++)
        backlog.push(rt.submit({ kernel: 'noop', ...(shared ? { share: 'x' } : {}) }));
      await new Promise((r) => setTimeout(r, 20));
      const t0 = performance.now();
      await rt.submit({ kernel: 'noop', ...(shared ? { share: 'y' } : {}) }).done;
      const waited = performance.now() - t0;
      await Promise.all(backlog.map((t) => t.done));
      return waited;
    };
    const fifo = await wait(false);
    const fair = await wait(true);
    // FIFO: behind ~190 queued tasks of 2 ms. Fair: behind at most 1 ms of queued work, plus its own.
    assert.ok(fifo > 250, `without share groups: ${fifo.toFixed(0)} ms`);
    assert.ok(fair < 40, `with share groups the newcomer waited ${fair.toFixed(0)} ms`);
  } finally {
    await rt.close();
  }
});

test('device time is shared by weight between competing groups', async () => {
  const rt = await oneWorkerRuntime();
  try {
    const heavy = rt.withShare('heavy', 3);
    const light = rt.withShare('light', 1);
    const order: string[] = [];
    const all: Promise<void>[] = [];
    for (let i = 0; i < 60; i++) {
      for (const [name, view] of [
        ['heavy', heavy],
        ['light', light],
      ] as const) {
        const t = view.submit({ kernel: 'spin', scalars: { us: 2000 } });
        all.push(t.done.then(() => void order.push(name)));
      }
    }
    await Promise.all(all);
    // While both compete (the first 60 completions), heavy gets ~3/4 of the device.
    const heavyFirst = order.slice(0, 60).filter((n) => n === 'heavy').length;
    assert.ok(heavyFirst >= 38 && heavyFirst <= 52, `heavy ran ${heavyFirst} of the first 60 tasks`);
    const usage = new Map(rt.shareUsage().map((u) => [u.share, u]));
    assert.equal(usage.get('heavy')?.weight, 3);
    assert.equal(usage.get('light')?.tasks, 60);
  } finally {
    await rt.close();
  }
});

test('a share view submits into the same runtime: its tensors, graphs and reads work as usual', async () => {
  const rt = await cpuRuntime();
  try {
    const view = rt.withShare('tenant-a');
    const x = view.tensor([4], 'f32', [1, 2, 3, 4]);
    const y = rt.tensor([4], 'f32');
    view.submit({ kernel: 'copy', args: { x, y } });
    assert.deepEqual(Array.from(await view.read(y)), [1, 2, 3, 4]);
    const handles = view.submitGraph([
      { id: 'a', kernel: 'noop' },
      { id: 'b', kernel: 'noop', deps: ['a'] },
    ]);
    await handles.get('b')!.done;
    view.free(x);
    const a = rt.shareUsage().find((u) => u.share === 'tenant-a');
    assert.equal(a?.tasks, 3);
    // A task naming its own group keeps it.
    await view.submit({ kernel: 'noop', share: 'other' }).done;
    assert.equal(rt.shareUsage().find((u) => u.share === 'other')?.tasks, 1);
  } finally {
    await rt.close();
  }
});

test('a bad share or weight is refused with TANDEM_ERR_INVALID_ARGUMENT and records nothing', async () => {
  const rt = await cpuRuntime();
  try {
    const invalid = (e: unknown): boolean => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT';
    for (const share of ['', 'x'.repeat(129), 42, {}]) {
      assert.throws(() => rt.submit({ kernel: 'noop', share: share as string }), invalid);
    }
    for (const weight of [0, -1, Number.NaN, Infinity, 1e7]) {
      assert.throws(() => rt.withShare('w', weight), invalid);
    }
    assert.deepEqual(rt.shareUsage(), []);
    assert.equal(rt.pendingTasks, 0);
  } finally {
    await rt.close();
  }
});
