/**
 * The paths that tiny tasks take (no tensors, explicit deps, shared empty lists, fields kept aside
 * until needed) behave like any other task: order, names, tags, constraints, promises and failures.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTandemError } from '../../src/core/errors.js';
import type { Observer, TaskEvent } from '../../src/obs/observer.js';
import type { TaskHandle } from '../../src/runtime/task.js';
import { cpuRuntime, registerDoubleOrThrow } from './helpers.js';

function recorder(): Observer & { ends: TaskEvent[]; starts: number } {
  const o = {
    ends: [] as TaskEvent[],
    starts: 0,
    onTaskStart: (): void => void o.starts++,
    onTaskEnd: (e: TaskEvent): void => void o.ends.push(e),
  };
  return o;
}

test('interleaved chains of empty tasks finish in chain order, each task once', async () => {
  const rt = await cpuRuntime();
  const rec = recorder();
  rt.addObserver(rec);
  try {
    const chains = 8;
    const n = 20_000;
    const chainOf = new Map<number, number>();
    const last: (TaskHandle | undefined)[] = new Array<TaskHandle | undefined>(chains).fill(undefined);
    for (let i = 0; i < n; i++) {
      const c = i % chains;
      const prev = last[c];
      const t = rt.submit({ kernel: 'noop', ...(prev ? { deps: [prev] } : {}) });
      chainOf.set(t.id, c);
      last[c] = t;
    }
    await rt.idle();
    assert.equal(rec.ends.length, n);
    assert.equal(rec.starts, n);
    const lastId = new Array<number>(chains).fill(-1);
    for (const e of rec.ends) {
      const c = chainOf.get(e.taskId)!;
      assert.ok(e.ok);
      assert.ok(e.taskId > lastId[c]!, `chain ${c}: task ${e.taskId} ended after ${lastId[c]}`);
      assert.ok(e.submitUs <= e.readyUs && e.readyUs <= e.endUs);
      lastId[c] = e.taskId;
    }
    for (const t of last) assert.equal(t!.state, 'done');
    await last[0]!.done; // asked for after completion: resolves at once
  } finally {
    await rt.close();
  }
});

test('names, tags and device constraints survive to the trace; done works before and after', async () => {
  const rt = await cpuRuntime();
  const rec = recorder();
  rt.addObserver(rec);
  try {
    const a = rt.submit({ kernel: 'noop' });
    const pending = a.done; // asked for before completion
    const b = rt.submit({ kernel: 'noop', name: 'second', tags: { job: 'j1' }, device: 'cpu', deps: [a, a] });
    const c = rt.submit({ kernel: 'noop', deps: new Set([a, b]) as unknown as TaskHandle[] });
    await Promise.all([pending, b.done, c.done]);
    assert.equal(a.name, 'noop');
    assert.equal(b.name, 'second');
    assert.equal(b.error, null);
    assert.match(b.deviceId ?? '', /^cpu/);
    const eb = rec.ends.find((e) => e.taskId === b.id)!;
    assert.equal(eb.name, 'second');
    assert.deepEqual(eb.tags, { job: 'j1' });
    assert.equal(rec.ends.find((e) => e.taskId === a.id)!.tags, undefined);
    const order = rec.ends.map((e) => e.taskId);
    assert.ok(order.indexOf(a.id) < order.indexOf(b.id) && order.indexOf(b.id) < order.indexOf(c.id));
    assert.throws(
      () => rt.submit({ kernel: 'noop', deps: [{} as TaskHandle] }),
      (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
    );
    assert.throws(
      () => rt.submit({ kernel: 'noop', scalars: { nope: 1 } }),
      (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
    );
  } finally {
    await rt.close();
  }
});

test('a failed task fails its explicit dependents, before and after it failed, naming it', async () => {
  const rt = await cpuRuntime();
  try {
    registerDoubleOrThrow(rt);
    const bad = rt.submit({
      kernel: 'double_or_throw',
      name: 'bad',
      args: { x: rt.tensor([1], 'f32', [-5]), y: rt.tensor([1], 'f32') },
    });
    const early = rt.submit({ kernel: 'noop', deps: [bad] });
    const follower = rt.submit({ kernel: 'noop', deps: [early] });
    await rt.idle();
    const late = rt.submit({ kernel: 'noop', deps: [bad] });
    await rt.idle();
    for (const t of [early, follower, late]) {
      assert.equal(t.state, 'failed');
      assert.equal(t.error?.code, 'TANDEM_ERR_DEPENDENCY_FAILED');
      await assert.rejects(
        t.done,
        (e: unknown) => isTandemError(e) && e.code === 'TANDEM_ERR_DEPENDENCY_FAILED',
      );
    }
    assert.match(early.error!.message, /bad/);
    assert.equal(bad.error?.code, 'TANDEM_ERR_KERNEL_FAILED');
    // The runtime keeps serving.
    await rt.submit({ kernel: 'noop' }).done;
  } finally {
    await rt.close();
  }
});
