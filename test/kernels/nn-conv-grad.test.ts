/**
 * Gradient checks of the conv group: each backward float64 reference against central finite
 * differences of its forward reference, on L = Σ dy ⊙ forward(...) with random dy, so dL/dθ is exactly
 * what the backward op computes. conv2d and avg-pool are linear (the differences are exact up to
 * rounding); max-pool is piecewise linear and random f64 inputs have no ties within the step.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fillRandom } from '../../src/core/seeded-random.js';
import { numel } from '../../src/core/shape.js';
import type { RefArg, ReferenceFn } from '../../src/kernels/common/reference.js';
import { conv2dReference } from '../../src/kernels/conv2d/reference.js';
import { outputExtent } from '../../src/kernels/conv2d/geometry.js';
import { conv2dBackwardReference } from '../../src/kernels/conv2d_backward/reference.js';
import { pool2dReference } from '../../src/kernels/pool2d/reference.js';
import { pool2dBackwardReference } from '../../src/kernels/pool2d_backward/reference.js';

let seed = 11;

function arg(shape: readonly number[], values?: Float64Array): RefArg {
  const v = values ?? fillRandom(new Float64Array(numel(shape)), seed++);
  return { desc: { shape: [...shape], dtype: 'f64', bytes: 8 * numel(shape) }, values: v };
}

/** Σ dy ⊙ out, the scalar whose gradient the backward op returns. */
function loss(
  forward: ReferenceFn,
  args: Record<string, RefArg>,
  scalars: Record<string, number | string>,
  out: string,
  dy: Float64Array,
): number {
  const y = forward(args, scalars)[out]!;
  let s = 0;
  for (let i = 0; i < y.length; i++) s += y[i]! * dy[i]!;
  return s;
}

/** Central differences of `loss` with respect to every element of args[name]. */
function numericGradient(
  forward: ReferenceFn,
  args: Record<string, RefArg>,
  scalars: Record<string, number | string>,
  out: string,
  dy: Float64Array,
  name: string,
  step: number,
): Float64Array {
  const values = args[name]!.values;
  const grad = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    values[i] = v + step;
    const up = loss(forward, args, scalars, out, dy);
    values[i] = v - step;
    const down = loss(forward, args, scalars, out, dy);
    values[i] = v;
    grad[i] = (up - down) / (2 * step);
  }
  return grad;
}

function assertClose(got: Float64Array, want: Float64Array, tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++)
    worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / (1 + Math.abs(want[i]!)));
  assert.ok(worst <= tol, `${what}: worst relative difference ${worst} > ${tol}`);
  assert.ok(
    want.some((v) => v !== 0),
    `${what}: the gradient is not all zero`,
  );
}

const CONV_CASES = [
  { n: 2, c: 3, h: 5, w: 6, o: 4, kh: 3, kw: 3, stride: 1, padding: 1 },
  { n: 1, c: 2, h: 7, w: 6, o: 3, kh: 5, kw: 5, stride: 2, padding: 2 },
  { n: 2, c: 2, h: 5, w: 7, o: 2, kh: 3, kw: 5, stride: 2, padding: 0 },
];

void describe('conv2d_backward reference = finite differences of conv2d', () => {
  for (const s of CONV_CASES) {
    const label = `n${s.n} c${s.c} ${s.h}x${s.w} o${s.o} k${s.kh}x${s.kw} s${s.stride} p${s.padding}`;
    void it(label, () => {
      const ho = outputExtent(s.h, s.kh, s.stride, s.padding);
      const wo = outputExtent(s.w, s.kw, s.stride, s.padding);
      const args = { x: arg([s.n, s.c, s.h, s.w]), w: arg([s.o, s.c, s.kh, s.kw]), b: arg([s.o]) };
      const dy = arg([s.n, s.o, ho, wo]);
      const scalars = { stride: s.stride, padding: s.padding };
      const back = conv2dBackwardReference(
        { dy, x: args.x, w: args.w, dx: arg(args.x.desc.shape), dw: arg(args.w.desc.shape), db: arg([s.o]) },
        scalars,
      );
      for (const [name, grad] of [
        ['x', 'dx'],
        ['w', 'dw'],
        ['b', 'db'],
      ] as const) {
        const numeric = numericGradient(conv2dReference, args, scalars, 'y', dy.values, name, 1e-3);
        assertClose(back[grad]!, numeric, 1e-9, `${label} ${grad}`);
      }
    });
  }

  void it('accumulate: dw and db add to what they hold, dx is overwritten', () => {
    const s = CONV_CASES[0]!;
    const x = arg([s.n, s.c, s.h, s.w]);
    const w = arg([s.o, s.c, s.kh, s.kw]);
    const dy = arg([s.n, s.o, s.h, s.w]);
    const old = { dx: arg(x.desc.shape), dw: arg(w.desc.shape), db: arg([s.o]) };
    const scalars = { stride: 1, padding: 1 };
    const fresh = conv2dBackwardReference({ dy, x, w, ...old }, scalars);
    const summed = conv2dBackwardReference({ dy, x, w, ...old }, { ...scalars, accumulate: true });
    assert.deepEqual(summed.dx, fresh.dx);
    // The same sums started from the old values: equal up to the order of the additions.
    assertClose(
      summed.dw!,
      fresh.dw!.map((v, i) => v + old.dw.values[i]!),
      1e-13,
      'dw',
    );
    assertClose(
      summed.db!,
      fresh.db!.map((v, i) => v + old.db.values[i]!),
      1e-13,
      'db',
    );
  });
});

const POOL_CASES = [
  { n: 2, c: 2, h: 6, w: 6, kernel: 2, stride: 2, padding: 0 },
  { n: 1, c: 2, h: 7, w: 5, kernel: 3, stride: 2, padding: 1 },
  { n: 1, c: 1, h: 6, w: 7, kernel: 3, stride: 1, padding: 1 },
  { n: 1, c: 2, h: 9, w: 8, kernel: 5, stride: 2, padding: 2 },
];

void describe('pool2d_backward reference = finite differences of pool2d', () => {
  for (const op of ['max', 'avg'] as const) {
    for (const s of POOL_CASES) {
      const label = `${op} n${s.n} c${s.c} ${s.h}x${s.w} k${s.kernel} s${s.stride} p${s.padding}`;
      void it(label, () => {
        const ho = outputExtent(s.h, s.kernel, s.stride, s.padding);
        const wo = outputExtent(s.w, s.kernel, s.stride, s.padding);
        const x = arg([s.n, s.c, s.h, s.w]);
        const dy = arg([s.n, s.c, ho, wo]);
        const scalars = { op, kernel: s.kernel, stride: s.stride, padding: s.padding };
        const back = pool2dBackwardReference({ x, dy, dx: arg(x.desc.shape) }, scalars);
        const numeric = numericGradient(pool2dReference, { x }, scalars, 'y', dy.values, 'x', 1e-7);
        assertClose(back.dx!, numeric, 1e-7, label);
      });
    }
  }

  void it('max sends a tied window to its first maximum only', () => {
    const x = arg([1, 1, 2, 2], Float64Array.of(0.5, 0.5, 0.5, 0.25));
    const dy = arg([1, 1, 1, 1], Float64Array.of(3));
    const back = pool2dBackwardReference({ x, dy, dx: arg([1, 1, 2, 2]) }, { op: 'max', kernel: 2 });
    assert.deepEqual([...back.dx!], [3, 0, 0, 0]);
  });
});
