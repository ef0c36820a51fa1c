/**
 * Randomized task graphs over shared tensors must give exactly what sequential execution gives:
 * the dependencies inferred from access order (RAW, WAR, WAW) are what keeps them equal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../../src/memory/tensor.js';
import { simBackend } from '../../src/devices/sim/backend.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { SequenceStep } from '../../src/runtime/sequence.js';
import { cpuRuntime, randomValues } from './helpers.js';

type Op =
  | { kind: 'axpy'; x: number; y: number; alpha: number }
  | { kind: 'scale'; x: number; alpha: number }
  | { kind: 'copy'; x: number; y: number };

function randomProgram(seed: number, tensors: number, length: number): Op[] {
  const r = randomValues(length * 4, seed);
  const pick = (v: number): number => Math.floor(((v + 1) / 2) * tensors) % tensors;
  const ops: Op[] = [];
  for (let i = 0; i < length; i++) {
    const kind = r[i * 4]! < -0.33 ? 'axpy' : r[i * 4]! < 0.33 ? 'scale' : 'copy';
    const x = pick(r[i * 4 + 1]!);
    let y = pick(r[i * 4 + 2]!);
    if (y === x) y = (y + 1) % tensors;
    const alpha = 0.5 + (r[i * 4 + 3]! + 1) / 4; // in [0.5, 1): keeps values bounded
    ops.push(
      kind === 'axpy' ? { kind, x, y, alpha } : kind === 'scale' ? { kind, x, alpha } : { kind, x, y },
    );
  }
  return ops;
}

/** Float64 sequential execution: the reference the f32 graph must match to rounding. */
function sequential(init: Float64Array[], ops: Op[]): Float64Array[] {
  const v = init.map((a) => Float64Array.from(a, (x) => Math.fround(x)));
  for (const op of ops) {
    if (op.kind === 'axpy') v[op.y] = v[op.y]!.map((y, i) => op.alpha * v[op.x]![i]! + y);
    else if (op.kind === 'scale') v[op.x] = v[op.x]!.map((x) => op.alpha * x);
    else v[op.y] = Float64Array.from(v[op.x]!);
  }
  return v;
}

/** Any reordering of dependent ops changes results by O(1) relative; f32 rounding by ~1e-6. */
function assertClose(got: ArrayLike<number>, want: Float64Array, what: string): void {
  let scale = 0;
  for (const w of want) scale = Math.max(scale, Math.abs(w));
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i]! - want[i]!) / scale;
    assert.ok(
      err < 1e-4,
      `${what}[${i}]: got ${got[i]}, want ${want[i]} (relative error ${err.toExponential(2)})`,
    );
  }
}

for (const scheduler of ['eager', 'prio']) {
  test(`random task graphs equal sequential execution (${scheduler})`, async () => {
    const rt = await cpuRuntime({ scheduler });
    try {
      for (let seed = 1; seed <= 6; seed++) {
        const count = 5;
        const len = 64;
        const init = Array.from({ length: count }, (_, i) => randomValues(len, seed * 100 + i));
        const ts: Tensor[] = init.map((a) => rt.tensor([len], 'f32', a));
        const ops = randomProgram(seed, count, 300);
        ops.forEach((op, i) => {
          const priority = scheduler === 'prio' ? (i * 7919) % 13 : 0;
          if (op.kind === 'axpy')
            rt.submit({
              kernel: 'axpy',
              args: { x: ts[op.x]!, y: ts[op.y]! },
              scalars: { alpha: op.alpha },
              priority,
            });
          else if (op.kind === 'scale')
            rt.submit({ kernel: 'scale', args: { x: ts[op.x]! }, scalars: { alpha: op.alpha }, priority });
          else rt.submit({ kernel: 'copy', args: { x: ts[op.x]!, y: ts[op.y]! }, priority });
        });
        const expected = sequential(init, ops);
        for (let i = 0; i < count; i++) {
          const got = await rt.read(ts[i]!);
          assertClose(got, expected[i]!, `seed ${seed}, tensor ${i}`);
        }
      }
    } finally {
      await rt.close();
    }
  });
}

// On a second memory node (a computing sim GPU) too: a tensor a sequence reads before writing must be
// copied there, which a single host node cannot tell from a plain write.
for (const where of ['cpu eager', 'cpu ws', 'cpu dmdas', 'sim gpu'] as const)
  test(`random programs cut into sequences (some of them large) equal sequential execution (${where})`, async () => {
    const rt = where.startsWith('cpu')
      ? await cpuRuntime({ scheduler: where.slice(4) })
      : await Runtime.create({
          backends: [simBackend({ devices: [{ id: 'sim0', type: 'gpu', depth: 64, launchUs: 0 }] })],
          calibrate: false,
          log: () => undefined,
        });
    try {
      for (let seed = 1; seed <= 4; seed++) {
        // 24 tensors: a sequence of up to 40 ops touches more than 16 distinct tensors (the set path).
        const count = 24;
        const len = 32;
        const init = Array.from({ length: count }, (_, i) => randomValues(len, seed * 1000 + i));
        const ts: Tensor[] = init.map((a) => rt.tensor([len], 'f32', a));
        const ops = randomProgram(seed + 50, count, 400);
        const step = (op: Op): SequenceStep =>
          op.kind === 'axpy'
            ? { kernel: 'axpy', args: { x: ts[op.x]!, y: ts[op.y]! }, scalars: { alpha: op.alpha } }
            : op.kind === 'scale'
              ? { kernel: 'scale', args: { x: ts[op.x]! }, scalars: { alpha: op.alpha } }
              : { kernel: 'copy', args: { x: ts[op.x]!, y: ts[op.y]! } };
        const cuts = randomValues(ops.length, seed + 7);
        let sequences = 0;
        for (let i = 0; i < ops.length;) {
          // Chunks of 1 to 40 ops: a lone op goes as a plain task, longer runs as one sequence.
          const n = Math.min(ops.length - i, 1 + Math.floor(((cuts[i]! + 1) / 2) * 40));
          const chunk = ops.slice(i, i + n);
          if (n === 1) rt.submit(step(chunk[0]!));
          else {
            rt.submitSequence({ steps: chunk.map(step) });
            sequences++;
          }
          i += n;
        }
        assert.ok(sequences > 5, `${sequences} sequences`);
        const expected = sequential(init, ops);
        for (let i = 0; i < count; i++)
          assertClose(await rt.read(ts[i]!), expected[i]!, `seed ${seed}, tensor ${i}`);
      }
    } finally {
      await rt.close();
    }
  });

test('explicit dependencies order tasks that share no data', async () => {
  const rt = await cpuRuntime();
  try {
    const a = rt.tensor([4], 'f32', [1, 2, 3, 4]);
    const b = rt.tensor([4], 'f32', [0, 0, 0, 0]);
    const order: number[] = [];
    const t1 = rt.submit({ kernel: 'scale', args: { x: a }, scalars: { alpha: 2 } });
    const t2 = rt.submit({ kernel: 'fill', args: { y: b }, scalars: { value: 7 }, deps: [t1] });
    void t1.done.then(() => order.push(1));
    void t2.done.then(() => order.push(2));
    await rt.idle();
    assert.deepEqual(order, [1, 2]);
    assert.deepEqual(Array.from(await rt.read(a)), [2, 4, 6, 8]);
  } finally {
    await rt.close();
  }
});

test('host writes wait for readers and readers see earlier writes', async () => {
  const rt = await cpuRuntime();
  try {
    const x = rt.tensor([3], 'f64', [1, 2, 3]);
    const y = rt.tensor([3], 'f64');
    rt.submit({ kernel: 'copy', args: { x, y } });
    await rt.write(x, [9, 9, 9]); // must not overtake the copy's read of x
    assert.deepEqual(Array.from(await rt.read(y)), [1, 2, 3]);
    assert.deepEqual(Array.from(await rt.read(x)), [9, 9, 9]);
  } finally {
    await rt.close();
  }
});

test('a tensor without data reads as zeros; f16 and bf16 round-trip', async () => {
  const rt = await cpuRuntime();
  try {
    assert.deepEqual(Array.from(await rt.read(rt.tensor([2, 2], 'i32'))), [0, 0, 0, 0]);
    const h = rt.tensor([3], 'f16', [0.5, -2, 1024]);
    const hf = rt.tensor([3], 'f32');
    rt.submit({ kernel: 'cast', args: { x: h, y: hf } });
    assert.deepEqual(Array.from(await rt.read(hf)), [0.5, -2, 1024]);
    const b = rt.tensor([2], 'bf16', [1.5, -3]);
    const bf = rt.tensor([2], 'f64');
    rt.submit({ kernel: 'cast', args: { x: b, y: bf } });
    assert.deepEqual(Array.from(await rt.read(bf)), [1.5, -3]);
  } finally {
    await rt.close();
  }
});

test('a long dependency chain completes in order (chain forwarding)', async () => {
  const rt = await cpuRuntime();
  try {
    const x = rt.tensor([1], 'f64', [1]);
    for (let i = 0; i < 5000; i++)
      rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: i % 2 === 0 ? 3 : 1 / 3 } });
    const got = (await rt.read(x))[0]!;
    assert.ok(Math.abs(got - 1) < 1e-9, `got ${got}`);
    assert.equal(rt.stats.tasksFailed, 0);
  } finally {
    await rt.close();
  }
});

test('a long chain released all at once is forwarded without deep recursion', async () => {
  const rt = await cpuRuntime();
  try {
    const n = 256;
    const a = rt.tensor([n, n], 'f32', randomValues(n * n, 3));
    const c = rt.tensor([n, n], 'f32');
    rt.submit({ kernel: 'gemm', args: { a, b: a, c } });
    // The host read waits for the gemm; 20,000 followers pile up behind it and are released at once.
    const first = rt.read(c);
    for (let i = 0; i < 20_000; i++)
      rt.submit({ kernel: 'scale', args: { x: c }, scalars: { alpha: i % 2 === 0 ? 2 : 0.5 } });
    const before = await first;
    const after = await rt.read(c);
    assert.equal(rt.stats.tasksFailed, 0);
    assert.deepEqual(Array.from(after.slice(0, 8)), Array.from(before.slice(0, 8)));
  } finally {
    await rt.close();
  }
});
