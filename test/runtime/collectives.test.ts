/**
 * Collectives in the runtime on the CPU (the portable engine: ordinary tasks, 2 and 3 ranks sharing
 * cpu0): each against a float64 reference with random inputs and outputs poisoned with NaN; ordered
 * after the writers of their tensors and before later readers; visible to observers; bad input refused
 * with stable codes. The placed-task path the NCCL engine uses is exercised here with a host-memory
 * work function (the NCCL engine itself runs in test/gpu/nccl.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DType } from '../../src/core/dtype.js';
import { hostView } from '../../src/core/dtype.js';
import { isTandemError } from '../../src/core/errors.js';
import type { HostBuffer } from '../../src/devices/device.js';
import type { TaskEvent } from '../../src/obs/observer.js';
import type { Runtime, Tensor } from '../../src/runtime/runtime.js';
import { cpuRuntime, randomValues } from './helpers.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

const ranksOf = (n: number): string[] => Array.from({ length: n }, (_, i) => `cpu0#${i}`);
const TOL: Record<string, number> = { f64: 1e-15, f32: 1e-6, bf16: 1.6e-2 };

function near(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++)
    if (!(Math.abs(got[i]! - want[i]!) <= tol * (1 + Math.abs(want[i]!))))
      assert.fail(`${what}: [${i}] = ${got[i]}, want ${want[i]}`);
}

/** Tensors holding random values; returns them and the values they really hold (rounded to dtype). */
async function inputs(
  n: number,
  size: number,
  dtype: DType,
  seed: number,
): Promise<{ ts: Tensor[]; vals: Float64Array[] }> {
  const ts: Tensor[] = [];
  const vals: Float64Array[] = [];
  for (let r = 0; r < n; r++) {
    const t = rt.tensor([size], dtype, randomValues(size, seed + r));
    ts.push(t);
    vals.push(Float64Array.from(await readNumbers(t)));
  }
  return { ts, vals };
}

async function readNumbers(t: Tensor): Promise<Float64Array> {
  const { toNumbers } = await import('../../src/core/dtype.js');
  return toNumbers(t.dtype, await rt.read(t));
}

const poisoned = (size: number, dtype: DType): Tensor =>
  rt.tensor([size], dtype, new Float64Array(size).fill(NaN));

function sumOf(vals: Float64Array[], avg: boolean): Float64Array {
  const s = new Float64Array(vals[0]!.length);
  for (const v of vals) for (let i = 0; i < s.length; i++) s[i]! += v[i]!;
  if (avg) for (let i = 0; i < s.length; i++) s[i]! /= vals.length;
  return s;
}

void describe('portable collectives on the CPU', () => {
  for (const n of [2, 3])
    for (const dtype of ['f64', 'f32', 'bf16'] as const) {
      void it(`${n} ranks, ${dtype}: allReduce sum/avg, reduceScatter, allGather, broadcast match float64`, async () => {
        const comm = rt.collectives(ranksOf(n));
        assert.equal(comm.engine, 'portable');
        const tol = TOL[dtype]!;
        for (const op of ['sum', 'avg'] as const) {
          const { ts, vals } = await inputs(n, 1001, dtype, 10);
          await comm.allReduce(ts, op).done;
          const want = sumOf(vals, op === 'avg');
          for (let r = 0; r < n; r++) near(await readNumbers(ts[r]!), want, tol, `allReduce ${op} rank ${r}`);
        }
        const k = 257;
        {
          const { ts, vals } = await inputs(n, n * k, dtype, 20);
          const outs = ranksOf(n).map(() => poisoned(k, dtype));
          await comm.reduceScatter(ts, outs, 'avg').done;
          const want = sumOf(vals, true);
          for (let r = 0; r < n; r++)
            near(await readNumbers(outs[r]!), want.slice(r * k, (r + 1) * k), tol, `reduceScatter rank ${r}`);
        }
        {
          const { ts, vals } = await inputs(n, k, dtype, 30);
          const outs = ranksOf(n).map(() => poisoned(n * k, dtype));
          await comm.allGather(ts, outs).done;
          const want = new Float64Array(n * k);
          vals.forEach((v, j) => want.set(v, j * k));
          for (let r = 0; r < n; r++) near(await readNumbers(outs[r]!), want, 0, `allGather rank ${r}`);
        }
        {
          const { ts, vals } = await inputs(n, 99, dtype, 40);
          await comm.broadcast(ts, n - 1).done;
          for (let r = 0; r < n; r++) near(await readNumbers(ts[r]!), vals[n - 1]!, 0, `broadcast rank ${r}`);
        }
        comm.close();
      });
    }

  void it('allReduceMany: a bucket of tensors of different sizes per rank, each averaged', async () => {
    const comm = rt.collectives(ranksOf(3));
    const sizes = [5, 300, 17];
    const per = await Promise.all(
      [0, 1, 2].map((r) => Promise.all(sizes.map((n, j) => inputs(1, n, 'f32', 100 * r + j)))),
    );
    await comm.allReduceMany(
      per.map((l) => l.map((x) => x.ts[0]!)),
      'avg',
    ).done;
    for (let j = 0; j < sizes.length; j++) {
      const want = sumOf(
        per.map((l) => l[j]!.vals[0]!),
        true,
      );
      for (let r = 0; r < 3; r++)
        near(await readNumbers(per[r]![j]!.ts[0]!), want, 1e-6, `tensor ${j} rank ${r}`);
    }
    assert.throws(
      () => comm.allReduceMany([per[0]!.map((x) => x.ts[0]!), [], []]),
      (e) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
    );
    comm.close();
  });

  void it('is ordered after the writers of its tensors and before later readers, and observers see it', async () => {
    const events: TaskEvent[] = [];
    const observer = { onTaskEnd: (e: TaskEvent) => void events.push(e) };
    rt.addObserver(observer);
    try {
      const comm = rt.collectives(ranksOf(2));
      const { ts, vals } = await inputs(2, 5000, 'f64', 50);
      // Not awaited: the collective must wait for these writers, and the readers after it for it.
      rt.submit({ kernel: 'scale', args: { x: ts[0]! }, scalars: { alpha: 3 } });
      rt.submit({ kernel: 'scale', args: { x: ts[1]! }, scalars: { alpha: -2 } });
      comm.allReduce(ts, 'sum');
      for (const t of ts) rt.submit({ kernel: 'scale', args: { x: t }, scalars: { alpha: 0.5 } });
      const want = vals[0]!.map((v, i) => 0.5 * (3 * v - 2 * vals[1]![i]!));
      for (const t of ts) near(await readNumbers(t), want, 1e-15, 'scale → allReduce → scale');
      assert.ok(
        events.some((e) => e.name.startsWith('allReduce.sum:') && e.deviceId === 'cpu0'),
        'trace names the collective',
      );
    } finally {
      rt.removeObserver(observer);
    }
  });

  void it('refuses bad ranks and bad tensors with stable codes', async () => {
    const code = (fn: () => unknown, want: string): void =>
      assert.throws(fn, (e) => isTandemError(e) && e.code === want, want);
    code(() => rt.collectives([]), 'TANDEM_ERR_INVALID_ARGUMENT');
    code(() => rt.collectives(['cpu0', 'cpu0']), 'TANDEM_ERR_INVALID_ARGUMENT');
    code(() => rt.collectives(['cpu0#0', 'cuda7']), 'TANDEM_ERR_NO_DEVICE');
    code(() => rt.collectives(['cpu0#0', 'cpu0#1'], { engine: 'nccl' }), 'TANDEM_ERR_UNSUPPORTED');
    code(() => rt.collectives(['cpu0'], { engine: 'mpi' as never }), 'TANDEM_ERR_INVALID_ARGUMENT');
    const comm = rt.collectives(ranksOf(2));
    const a = rt.tensor([8], 'f32', randomValues(8, 1));
    const b = rt.tensor([8], 'f32', randomValues(8, 2));
    code(() => comm.allReduce([a]), 'TANDEM_ERR_INVALID_ARGUMENT');
    code(() => comm.allReduce([a, a]), 'TANDEM_ERR_INVALID_ARGUMENT');
    code(() => comm.allReduce([a, rt.tensor([9], 'f32')]), 'TANDEM_ERR_SHAPE');
    code(() => comm.allReduce([a, rt.tensor([8], 'f64')]), 'TANDEM_ERR_DTYPE');
    code(() => comm.allReduce([rt.tensor([8], 'i32'), rt.tensor([8], 'i32')]), 'TANDEM_ERR_DTYPE');
    code(() => comm.allReduce([a, b], 'max' as never), 'TANDEM_ERR_INVALID_ARGUMENT');
    code(() => comm.reduceScatter([a, b], [rt.tensor([3]), rt.tensor([3])]), 'TANDEM_ERR_SHAPE');
    code(
      () => comm.allGather([rt.tensor([2, 2]), rt.tensor([2, 2])], [rt.tensor([8]), rt.tensor([8])]),
      'TANDEM_ERR_SHAPE',
    );
    code(() => comm.broadcast([a, b], 2), 'TANDEM_ERR_INVALID_ARGUMENT');
    comm.close();
    code(() => comm.allReduce([a, b]), 'TANDEM_ERR_CLOSED');
  });
});

void describe('placed tasks (the path of the NCCL engine)', () => {
  void it('read and written on their nodes, ordered by tensors, completed by their callback, observed', async () => {
    const events: TaskEvent[] = [];
    const observer = { onTaskEnd: (e: TaskEvent) => void events.push(e) };
    rt.addObserver(observer);
    try {
      const node = rt.devices[0]!.node;
      const x = rt.tensor([64], 'f64', randomValues(64, 7));
      const want = Float64Array.from(await readNumbers(x), (v) => 2 * (v + 1));
      const y = poisoned(64, 'f64');
      rt.submit({ kernel: 'axpy', args: { x: rt.tensor([64], 'f64', new Float64Array(64).fill(1)), y: x } });
      const task = rt.submitPlaced('double', [x, y], ['r', 'w'], {
        nodes: [node, node],
        deviceId: 'cpu0+cpu0',
        queueId: 'test.comm',
        run: (bufs, done) => {
          const [bx, by] = bufs as HostBuffer[];
          const src = hostView('f64', bx!.sab, 0, 64);
          const dst = hostView('f64', by!.sab, 0, 64);
          // Completes later, from a timer, as a comm stream's poller would.
          setTimeout(() => {
            for (let i = 0; i < 64; i++) dst[i] = 2 * src[i]!;
            done(null);
          }, 5);
        },
      });
      await task.done;
      near(await readNumbers(y), want, 0, 'y = 2 (x + 1)');
      const e = events.find((ev) => ev.name === 'double');
      assert.equal(e?.queueId, 'test.comm');
      assert.equal(e?.deviceId, 'cpu0+cpu0');
      const failing = rt.submitPlaced('fails', [y], ['rw'], {
        nodes: [node],
        deviceId: 'cpu0',
        queueId: 'test.comm',
        run: (_b, done) => done(new Error('link down')),
      });
      await assert.rejects(
        failing.done,
        (err) => isTandemError(err) && err.code === 'TANDEM_ERR_KERNEL_FAILED',
      );
    } finally {
      rt.removeObserver(observer);
    }
  });
});
