/**
 * Sequences (rt.submitSequence): many kernel calls as one task. They must compute exactly what the same
 * calls submitted one by one compute, order with other tasks through their tensors, fail as a chain
 * fails, and refuse bad steps with the codes `submit` uses, before anything runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExecQueue, LaunchTiming, ReplayRequest } from '../../src/devices/device.js';
import type { Tensor } from '../../src/memory/tensor.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { SequenceCollector } from '../../src/runtime/sequence-collector.js';
import type { SequenceStep } from '../../src/runtime/sequence.js';
import { cpuRuntime, expectCode, randomValues, registerDoubleOrThrow } from './helpers.js';

const code = expectCode;

const M = 7;
const K = 5;
const N = 6;

/** C = A·B, then C *= 0.5, then Y += 3·C, then C = C·Bᵀ·… : a chain with reads after writes. */
function chain(rt: Runtime, seed: number) {
  const a = rt.tensor([M, K], 'f64', randomValues(M * K, seed));
  const b = rt.tensor([K, N], 'f64', randomValues(K * N, seed + 1));
  // Poisoned: every element must be written by the gemm (beta 0 only writes C).
  const c = rt.tensor([M, N], 'f64', new Float64Array(M * N).fill(Number.NaN));
  const y = rt.tensor([M, N], 'f64', randomValues(M * N, seed + 2));
  const steps: SequenceStep[] = [
    { kernel: 'gemm', args: { a, b, c } },
    { kernel: 'scale', args: { x: c }, scalars: { alpha: 0.5 } },
    { kernel: 'axpy', args: { x: c, y }, scalars: { alpha: 3 } },
  ];
  return { a, b, c, y, steps };
}

/** The float64 reference of `chain` on the host. */
async function reference(rt: Runtime, a: Tensor, b: Tensor, y: Tensor): Promise<Float64Array> {
  const av = (await rt.read(a)) as Float64Array;
  const bv = (await rt.read(b)) as Float64Array;
  const out = Float64Array.from((await rt.read(y)) as Float64Array);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += av[i * K + k]! * bv[k * N + j]!;
      out[i * N + j]! += 3 * 0.5 * s;
    }
  return out;
}

test('a sequence computes exactly what its steps submitted one by one compute', async () => {
  const rt = await cpuRuntime();
  try {
    const one = chain(rt, 11);
    const want = await reference(rt, one.a, one.b, one.y);
    for (const s of one.steps) rt.submit(s);
    const two = chain(rt, 11);
    const task = rt.submitSequence({ steps: two.steps, name: 'chain' });
    assert.equal(task.name, 'chain');
    await task.done;
    assert.equal(task.state, 'done');
    const separate = (await rt.read(one.y)) as Float64Array;
    const together = (await rt.read(two.y)) as Float64Array;
    assert.deepEqual(Array.from(together), Array.from(separate));
    for (let i = 0; i < want.length; i++)
      assert.ok(Math.abs(together[i]! - want[i]!) <= 1e-12 * (1 + Math.abs(want[i]!)), `y[${i}]`);
    assert.ok(!Array.from((await rt.read(two.c)) as Float64Array).some(Number.isNaN), 'c fully written');
  } finally {
    await rt.close();
  }
});

test('a sequence is ordered with the tasks around it by its tensors', async () => {
  const rt = await cpuRuntime();
  try {
    const { a, b, y, steps } = chain(rt, 21);
    // Before: doubles A (the sequence must read the doubled A). After: reads Y (must see the sum).
    rt.submit({ kernel: 'scale', args: { x: a }, scalars: { alpha: 2 } });
    const seq = rt.submitSequence({ steps, device: 'cpu' });
    const after = rt.tensor([M, N], 'f64', new Float64Array(M * N).fill(Number.NaN));
    rt.submit({ kernel: 'copy', args: { x: y, y: after } });
    // And a later write to A must not overtake the sequence's read of it.
    rt.submit({ kernel: 'scale', args: { x: a }, scalars: { alpha: 100 } });
    await seq.done;
    const got = (await rt.read(after)) as Float64Array;
    const a2 = (await rt.read(a)) as Float64Array;
    // Undo the later ×100 to rebuild the doubled A the sequence saw, then the reference with it.
    const check = await cpuRuntime();
    try {
      const aSeen = check.tensor(
        [M, K],
        'f64',
        Float64Array.from(a2, (v) => v / 100),
      );
      const y0 = check.tensor([M, N], 'f64', randomValues(M * N, 23));
      const bv = check.tensor([K, N], 'f64', (await rt.read(b)) as Float64Array);
      const want = await reference(check, aSeen, bv, y0);
      for (let i = 0; i < want.length; i++)
        assert.ok(Math.abs(got[i]! - want[i]!) <= 1e-12 * (1 + Math.abs(want[i]!)), `after[${i}]`);
    } finally {
      await check.close();
    }
  } finally {
    await rt.close();
  }
});

test('a step that fails fails the sequence with its error; dependents fail naming the sequence', async () => {
  const rt = await cpuRuntime();
  try {
    registerDoubleOrThrow(rt);
    const x = rt.tensor([3], 'f32', [1, 2, 3]);
    const bad = rt.tensor([3], 'f32', [1, -1, 2]);
    const mid = rt.tensor([3], 'f32');
    const out = rt.tensor([3], 'f32');
    const seq = rt.submitSequence({
      name: 'doubling chain',
      steps: [
        { kernel: 'scale', args: { x }, scalars: { alpha: 2 } },
        { kernel: 'double_or_throw', args: { x: bad, y: mid } },
        { kernel: 'double_or_throw', args: { x: mid, y: out } },
      ],
    });
    const next = rt.submit({ kernel: 'scale', args: { x: out }, scalars: { alpha: 2 } });
    await assert.rejects(seq.done, code('TANDEM_ERR_KERNEL_FAILED', /negative input at 1/));
    await assert.rejects(next.done, code('TANDEM_ERR_DEPENDENCY_FAILED', /doubling chain/));
    // The runtime keeps serving, sequences included.
    const good = rt.tensor([3], 'f32', [1, 2, 3]);
    const y = rt.tensor([3], 'f32');
    await rt.submitSequence({
      steps: [
        { kernel: 'double_or_throw', args: { x: good, y } },
        { kernel: 'scale', args: { x: y }, scalars: { alpha: 0.5 } },
      ],
    }).done;
    assert.deepEqual(Array.from(await rt.read(y)), [1, 2, 3]);
  } finally {
    await rt.close();
  }
});

test('bad sequences are refused with the codes submit uses, naming the step, before anything runs', async () => {
  const rt = await cpuRuntime();
  try {
    const x = rt.tensor([4], 'f32', [1, 2, 3, 4]);
    const m = rt.tensor([2, 2], 'f32', [1, 2, 3, 4]);
    const scaleX = { kernel: 'scale', args: { x }, scalars: { alpha: 2 } };
    assert.throws(() => rt.submitSequence({ steps: [] }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.throws(
      () => rt.submitSequence({ steps: 'gemm' as unknown as SequenceStep[] }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    assert.throws(
      () => rt.submitSequence({ steps: [scaleX, { kernel: 'nope' }] }),
      code('TANDEM_ERR_UNKNOWN_KERNEL', /step 1/),
    );
    assert.throws(
      () => rt.submitSequence({ steps: [scaleX, scaleX, { kernel: 'gemm', args: { a: m, b: x, c: m } }] }),
      (e: unknown) =>
        code('TANDEM_ERR_SHAPE', /step 2/)(e) &&
        (e as { details: { step?: string } }).details.step !== undefined,
    );
    assert.throws(
      () => rt.submitSequence({ steps: [scaleX, { kernel: 'scale', args: { x } }] }),
      code('TANDEM_ERR_INVALID_ARGUMENT', /step 1/),
    );
    assert.throws(
      () => rt.submitSequence({ steps: [scaleX], device: 'cuda7' }),
      code('TANDEM_ERR_NO_DEVICE'),
    );
    assert.throws(
      () => rt.submitSequence({ steps: [scaleX, { ...scaleX, device: 'cpu' } as SequenceStep] }),
      code('TANDEM_ERR_INVALID_ARGUMENT', /step 1 sets device/),
    );
    assert.throws(
      () => rt.submitSequence({ steps: [scaleX], priority: Number.NaN }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    assert.throws(
      () => rt.submitSequence({ steps: [null as unknown as SequenceStep] }),
      code('TANDEM_ERR_INVALID_ARGUMENT', /step 0/),
    );
    // Nothing ran: x was scaled by none of the refused sequences.
    assert.deepEqual(Array.from(await rt.read(x)), [1, 2, 3, 4]);
  } finally {
    await rt.close();
  }
});

test('a sequence through a share view is charged to its group', async () => {
  const rt = await cpuRuntime();
  try {
    const view = rt.withShare('tenant-a');
    const { steps, y } = chain(rt, 31);
    await view.submitSequence({ steps }).done;
    assert.ok(Number.isFinite((await rt.read(y))[0]));
    const usage = rt.shareUsage().find((u) => u.share === 'tenant-a');
    assert.ok(usage, 'the group is known');
    assert.equal(usage.tasks, 1, 'one task for the whole sequence');
    assert.ok(usage.deviceSeconds > 0, `device time charged: ${JSON.stringify(usage)}`);
  } finally {
    await rt.close();
  }
});

test('a prepared sequence runs again on new inputs; after a failed run it fails as its dependent', async () => {
  const rt = await cpuRuntime();
  try {
    registerDoubleOrThrow(rt);
    const x = rt.tensor([4], 'f32', [1, 2, 3, 4]);
    const y = rt.tensor([4], 'f32');
    const p = rt.prepareSequence({
      name: 'prepared',
      steps: [
        { kernel: 'double_or_throw', args: { x, y } },
        { kernel: 'scale', args: { x: y }, scalars: { alpha: 3 } },
      ],
    });
    await rt.submitPrepared(p).done;
    assert.deepEqual(Array.from(await rt.read(y)), [6, 12, 18, 24]);
    await rt.write(x, [5, 6, 7, 8]);
    const again = rt.submitPrepared(p, { run: 'second' });
    assert.equal(again.name, 'prepared');
    await again.done;
    assert.deepEqual(Array.from(await rt.read(y)), [30, 36, 42, 48]);
    // A failed run leaves its outputs failed, as for any task: the next run fails naming it.
    await rt.write(x, [1, -2, 3, 4]);
    await assert.rejects(rt.submitPrepared(p).done, code('TANDEM_ERR_KERNEL_FAILED', /negative input at 1/));
    await assert.rejects(rt.submitPrepared(p).done, code('TANDEM_ERR_DEPENDENCY_FAILED', /prepared/));
    // Refusals: deps on a prepared sequence, something else as one, another runtime's, a tensor freed since.
    assert.throws(
      () =>
        rt.prepareSequence({
          steps: [{ kernel: 'scale', args: { x }, scalars: { alpha: 1 } }],
          deps: [again],
        }),
      code('TANDEM_ERR_INVALID_ARGUMENT', /deps belong to a submission/),
    );
    assert.throws(
      () => rt.submitPrepared({} as unknown as typeof p),
      code('TANDEM_ERR_INVALID_ARGUMENT', /not a sequence prepared by this runtime/),
    );
    const other = await cpuRuntime();
    try {
      assert.throws(() => other.submitPrepared(p), code('TANDEM_ERR_INVALID_ARGUMENT'));
    } finally {
      await other.close();
    }
    const z = rt.tensor([4], 'f32', [1, 1, 1, 1]);
    const q = rt.prepareSequence({ steps: [{ kernel: 'scale', args: { x: z }, scalars: { alpha: 2 } }] });
    rt.free(z);
    assert.throws(() => rt.submitPrepared(q), code('TANDEM_ERR_INVALID_ARGUMENT', /freed/));
  } finally {
    await rt.close();
  }
});

test('a collector holds frees back until its calls are out, and submits when it holds too much', async () => {
  const rt = await cpuRuntime();
  try {
    // Hold under 100 bytes: one 16-float tensor (64) stays held, two (128) pass it.
    const c = new SequenceCollector(rt, () => ({ device: 'cpu' }), 'test', 100);
    const x = rt.tensor([16], 'f32', randomValues(16, 3));
    const y = rt.tensor([16], 'f32');
    c.push({ kernel: 'copy', args: { x, y } });
    c.free(x); // y's copy still reads x: held, not freed
    assert.equal(x.freed, false);
    assert.equal(c.pending, 1);
    const z = rt.tensor([16], 'f32', randomValues(16, 4));
    c.push({ kernel: 'scale', args: { x: z }, scalars: { alpha: 2 } });
    c.free(z); // 128 bytes held: the calls go out, then both are freed
    assert.equal(c.pending, 0);
    assert.ok(x.freed && z.freed);
    assert.deepEqual(Array.from(await rt.read(y)), Array.from(Float32Array.from(randomValues(16, 3))));
    // Nothing pending: a free is immediate; a dropped pass submits nothing and frees what it held.
    const w = rt.tensor([4], 'f32', [1, 2, 3, 4]);
    c.free(w);
    assert.ok(w.freed);
    const u = rt.tensor([4], 'f32', [1, 2, 3, 4]);
    const v = rt.tensor([4], 'f32', [5, 5, 5, 5]);
    c.push({ kernel: 'copy', args: { x: u, y: v } });
    c.free(u);
    c.drop();
    assert.ok(u.freed);
    assert.deepEqual(Array.from(await rt.read(v)), [5, 5, 5, 5]);
    assert.equal(c.flush(), null);
  } finally {
    await rt.close();
  }
});

test('a collector with chunks submits 2, 4, 4 calls as they come, and starts over after a flush', async () => {
  const rt = await cpuRuntime();
  try {
    const submitted: number[] = [];
    const counting = {
      submitSequence: (req: Parameters<Runtime['submitSequence']>[0]) => {
        submitted.push(req.steps.length);
        return rt.submitSequence(req);
      },
      free: (t: Tensor) => rt.free(t),
    };
    const c = new SequenceCollector(counting, () => ({ device: 'cpu' }), 'test', 2 ** 30, {
      first: 2,
      max: 4,
    });
    const x = rt.tensor([8], 'f64', randomValues(8, 5));
    const scale = (): void => c.push({ kernel: 'scale', args: { x }, scalars: { alpha: 2 } });
    for (let i = 0; i < 11; i++) scale();
    assert.deepEqual(submitted, [2, 4, 4]);
    assert.equal(c.pending, 1);
    c.flush();
    for (let i = 0; i < 3; i++) scale();
    assert.deepEqual(submitted, [2, 4, 4, 1, 2]);
    c.flush();
    // Every call ran once, in order: x doubled 14 times.
    const expected = randomValues(8, 5).map((v) => v * 2 ** 14);
    assert.deepEqual(Array.from((await rt.read(x)) as Float64Array), Array.from(expected));
  } finally {
    await rt.close();
  }
});

/**
 * The executor's side of ExecQueue.replay (CUDA graphs implement it; the CPU has none): a queue that
 * declines a prepared sequence's first run and then runs the steps itself, chained, reporting once.
 */
function replayingQueue(inner: ExecQueue, offered: ReplayRequest[], accepted: ReplayRequest[]): ExecQueue {
  const seen = new Set<object>();
  return {
    id: inner.id,
    depth: inner.depth,
    launch: (req, done) => inner.launch(req, done),
    replay(req: ReplayRequest, done: (err: Error | null) => void): boolean {
      offered.push(req);
      if (!seen.has(req.key)) {
        seen.add(req.key);
        return false;
      }
      accepted.push(req);
      let left = req.steps.length;
      let first: Error | null = null;
      req.steps.forEach((step, s) =>
        inner.launch(
          {
            taskId: req.lastStepId - req.steps.length + 1 + s,
            op: step.op,
            impl: step.impl,
            args: step.args,
            scalars: step.scalars,
            after: s === 0 ? [...req.after] : [req.lastStepId - req.steps.length + s],
          },
          (err: Error | null, _t?: LaunchTiming) => {
            first ??= err;
            if (--left === 0) done(first);
          },
        ),
      );
      return true;
    },
  };
}

test('prepared runs are offered to a queue that replays (declined first), fresh sequences are not', async () => {
  const rt = await cpuRuntime({ options: { cpu: { threads: 1 } } });
  try {
    const offered: ReplayRequest[] = [];
    const accepted: ReplayRequest[] = [];
    for (const w of rt.workers)
      (w as { queue: ExecQueue }).queue = replayingQueue(w.queue, offered, accepted);
    const { a, b, c, y, steps } = chain(rt, 31);
    await rt.submitSequence({ steps }).done;
    assert.equal(offered.length, 0, 'a fresh sequence is launched step by step');
    const prepared = rt.prepareSequence({ steps });
    for (let run = 0; run < 4; run++) {
      const want = await reference(rt, a, b, y); // y + 3 · 0.5 · a·b from y as it is now
      await rt.write(c, new Float64Array(M * N).fill(Number.NaN));
      await rt.submitPrepared(prepared).done;
      const got = (await rt.read(y)) as Float64Array;
      got.forEach((v, i) =>
        assert.ok(Math.abs(v - want[i]!) <= 1e-12 * (1 + Math.abs(want[i]!)), `run ${run}, y[${i}]`),
      );
    }
    assert.equal(offered.length, 4);
    assert.equal(accepted.length, 3, 'the first run is declined, the next three replayed');
    assert.ok(offered.every((r) => r.key === offered[0]!.key && r.steps.length === steps.length));
  } finally {
    await rt.close();
  }
});
