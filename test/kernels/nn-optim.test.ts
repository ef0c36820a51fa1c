/**
 * The optim group's float64 references against independent textbook forms of the same optimizers
 * (Adam with bias correction, SGD with momentum, clip_grad_norm_), the global-norm clipping contract,
 * and the validation codes. The CPU kernels are checked against these references by the conformance
 * cases (test/kernels/conformance.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DType, bytesPerElement } from '../../src/core/dtype.js';
import { type ErrorCode, isTandemError } from '../../src/core/errors.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import type { RefArg } from '../../src/kernels/common/reference.js';
import { REFERENCES } from '../../src/kernels/references.js';
import { defOf } from './cpu-harness.js';

function desc(shape: number[], dtype: DType = 'f64'): TensorDesc {
  return { shape, dtype, bytes: numel(shape) * bytesPerElement(dtype) };
}

function ref(values: ArrayLike<number>, dtype: DType = 'f64'): RefArg {
  return { desc: desc([values.length], dtype), values: Float64Array.from(values) };
}

function randomVector(n: number, seed: number, lo = -1, hi = 1): Float64Array {
  const rnd = seededRandom(seed);
  return Float64Array.from({ length: n }, () => lo + (hi - lo) * rnd());
}

function closeTo(got: number, want: number, rel: number, what: string): void {
  assert.ok(Math.abs(got - want) <= rel * Math.max(1, Math.abs(want)), `${what}: ${got} vs ${want}`);
}

const sumOfSquares = (x: ArrayLike<number>): number => Array.from(x).reduce((s, v) => s + v * v, 0);

describe('adamw reference', () => {
  it('follows textbook AdamW (bias-corrected moments, decoupled decay) over 7 steps', () => {
    const n = 33;
    const lr = 3e-3;
    const wd = 0.1;
    const [b1, b2, eps] = [0.9, 0.999, 1e-8];
    let p: Float64Array = randomVector(n, 1);
    let m: Float64Array = new Float64Array(n);
    let v: Float64Array = new Float64Array(n);
    const tp = Float64Array.from(p);
    const tm = new Float64Array(n);
    const tv = new Float64Array(n);
    for (let step = 1; step <= 7; step++) {
      const g = randomVector(n, 100 + step);
      const out = REFERENCES.adamw!(
        { p: ref(p), g: ref(g), m: ref(m), v: ref(v), norm: ref([sumOfSquares(g)]) },
        { lr, step, weightDecay: wd },
      );
      [p, m, v] = [out.p!, out.m!, out.v!];
      for (let i = 0; i < n; i++) {
        tp[i] = tp[i]! - lr * wd * tp[i]!;
        tm[i] = b1 * tm[i]! + (1 - b1) * g[i]!;
        tv[i] = b2 * tv[i]! + (1 - b2) * g[i]! ** 2;
        const mHat = tm[i]! / (1 - b1 ** step);
        const vHat = tv[i]! / (1 - b2 ** step);
        tp[i] = tp[i]! - (lr * mHat) / (Math.sqrt(vHat) + eps);
      }
    }
    for (let i = 0; i < n; i++) {
      closeTo(p[i]!, tp[i]!, 1e-12, `p[${i}]`);
      closeTo(m[i]!, tm[i]!, 1e-12, `m[${i}]`);
      closeTo(v[i]!, tv[i]!, 1e-12, `v[${i}]`);
    }
  });

  it('moves every weight by lr·g/(|g| + eps) (about lr·sign g) on the first step from zero moments', () => {
    const p = randomVector(9, 2);
    const g = randomVector(9, 3);
    const zero = new Float64Array(9);
    const out = REFERENCES.adamw!(
      { p: ref(p), g: ref(g), m: ref(zero), v: ref(zero), norm: ref([1]) },
      { lr: 0.01, step: 1, weightDecay: 0 },
    );
    for (let i = 0; i < 9; i++)
      closeTo(out.p![i]!, p[i]! - (0.01 * g[i]!) / (Math.abs(g[i]!) + 1e-8), 1e-12, `p[${i}]`);
  });

  it('clips like clip_grad_norm_: the unscaled, clipped gradient has norm maxNorm', () => {
    const g = randomVector(50, 4);
    const gradScale = 0.25;
    const maxNorm = 0.3;
    const zero = new Float64Array(50);
    const out = REFERENCES.adamw!(
      { p: ref(zero), g: ref(g), m: ref(zero), v: ref(zero), norm: ref([sumOfSquares(g)]) },
      { lr: 0.01, step: 1, beta1: 0, weightDecay: 0, gradScale, maxNorm },
    );
    // With beta1 = 0 the first moment is the transformed gradient itself.
    const clippedNorm = Math.sqrt(sumOfSquares(out.m!));
    const total = Math.sqrt(sumOfSquares(g)) * gradScale;
    closeTo(clippedNorm, (maxNorm * total) / (total + 1e-6), 1e-12, 'clipped norm');
    assert.ok(total > maxNorm, 'the case must actually clip');
  });

  it('never scales gradients up when the norm is under maxNorm', () => {
    const g = randomVector(10, 5);
    const zero = new Float64Array(10);
    const out = REFERENCES.adamw!(
      { p: ref(zero), g: ref(g), m: ref(zero), v: ref(zero), norm: ref([sumOfSquares(g)]) },
      { lr: 0.01, step: 1, beta1: 0, weightDecay: 0, maxNorm: 1e6 },
    );
    for (let i = 0; i < 10; i++) assert.equal(out.m![i], g[i]);
  });

  it('leaves p, m and v untouched on a non-finite norm with skipNonFinite, and not without it', () => {
    const p = randomVector(8, 6);
    const g = randomVector(8, 7);
    const m = randomVector(8, 8);
    const v = randomVector(8, 9, 0.1, 1);
    for (const norm of [Infinity, NaN]) {
      const args = { p: ref(p), g: ref(g), m: ref(m), v: ref(v), norm: ref([norm]) };
      const skipped = REFERENCES.adamw!(args, { lr: 0.01, step: 2, maxNorm: 1, skipNonFinite: true });
      assert.deepEqual([skipped.p, skipped.m, skipped.v], [p, m, v]);
      const applied = REFERENCES.adamw!(args, { lr: 0.01, step: 2, maxNorm: 1 });
      assert.notDeepEqual(applied.p, p);
    }
  });
});

describe('sgd reference', () => {
  it('follows textbook heavy-ball and nesterov momentum over 5 steps', () => {
    for (const nesterov of [false, true]) {
      const n = 17;
      const [lr, mu, wd] = [0.05, 0.9, 0.01];
      const damp = nesterov ? 0 : 0.2;
      let p: Float64Array = randomVector(n, 10);
      let buf: Float64Array = randomVector(n, 11); // garbage before the first step: `first` must ignore it
      const tp = Float64Array.from(p);
      const tb = new Float64Array(n);
      for (let step = 1; step <= 5; step++) {
        const g = randomVector(n, 200 + step);
        const out = REFERENCES.sgd!(
          { p: ref(p), g: ref(g), buf: ref(buf), norm: ref([1]) },
          { lr, momentum: mu, dampening: damp, weightDecay: wd, nesterov, first: step === 1 },
        );
        [p, buf] = [out.p!, out.buf!];
        for (let i = 0; i < n; i++) {
          const d = g[i]! + wd * tp[i]!;
          tb[i] = step === 1 ? d : mu * tb[i]! + (1 - damp) * d;
          tp[i] = tp[i]! - lr * (nesterov ? d + mu * tb[i]! : tb[i]!);
        }
      }
      for (let i = 0; i < n; i++) closeTo(p[i]!, tp[i]!, 1e-13, `nesterov ${nesterov} p[${i}]`);
    }
  });

  it('does not touch buf without momentum', () => {
    const buf = randomVector(5, 12);
    const out = REFERENCES.sgd!(
      { p: ref(randomVector(5, 13)), g: ref(randomVector(5, 14)), buf: ref(buf), norm: ref([1]) },
      { lr: 0.1 },
    );
    assert.deepEqual(out.buf, buf);
  });
});

describe('sumsq reference', () => {
  it('adds Σx² to acc and propagates inf', () => {
    const x = randomVector(100, 15);
    const out = REFERENCES.sumsq!({ x: ref(x), acc: ref([2.5]) }, {});
    closeTo(out.acc![0]!, 2.5 + sumOfSquares(x), 1e-14, 'acc');
    const inf = REFERENCES.sumsq!({ x: ref([1, Infinity]), acc: ref([0]) }, {});
    assert.equal(inf.acc![0], Infinity);
  });
});

interface BadCall {
  readonly why: string;
  readonly op: string;
  readonly args: Record<string, TensorDesc>;
  readonly scalars: Scalars;
  readonly code: ErrorCode;
}

const P = desc([4, 5], 'f32');
const ADAM = { p: P, g: P, m: P, v: P, norm: desc([1], 'f32') };
const SGD = { p: P, g: P, buf: P, norm: desc([1], 'f32') };
const BAD: readonly BadCall[] = [
  { why: 'lr missing', op: 'adamw', args: ADAM, scalars: { step: 1 }, code: 'TANDEM_ERR_INVALID_ARGUMENT' },
  {
    why: 'step 0',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: 1, step: 0 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'step 1.5',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: 1, step: 1.5 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'beta1 1',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: 1, step: 1, beta1: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'negative lr',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: -1, step: 1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'gradScale 0',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: 1, step: 1, gradScale: 0 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'negative maxNorm',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: 1, step: 1, maxNorm: -1 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'unknown scalar',
    op: 'adamw',
    args: ADAM,
    scalars: { lr: 1, step: 1, momentum: 0.9 },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'f16 parameter (adamw_mixed is for that)',
    op: 'adamw',
    args: { ...ADAM, p: desc([4, 5], 'f16'), m: desc([4, 5], 'f16'), v: desc([4, 5], 'f16') },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'm dtype differs from p',
    op: 'adamw',
    args: { ...ADAM, m: desc([4, 5], 'f64') },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'g shape differs',
    op: 'adamw',
    args: { ...ADAM, g: desc([5, 4], 'f32') },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'norm with two elements',
    op: 'adamw',
    args: { ...ADAM, norm: desc([2], 'f32') },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_SHAPE',
  },
  {
    why: 'norm i32',
    op: 'adamw',
    args: { ...ADAM, norm: desc([1], 'i32') },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'f32 parameter',
    op: 'adamw_mixed',
    args: { ...ADAM, master: P },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'f16 master',
    op: 'adamw_mixed',
    args: { ...ADAM, p: desc([4, 5], 'bf16'), master: desc([4, 5], 'f16') },
    scalars: { lr: 1, step: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'nesterov with dampening',
    op: 'sgd',
    args: SGD,
    scalars: { lr: 1, momentum: 0.9, dampening: 0.1, nesterov: true },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'nesterov without momentum',
    op: 'sgd',
    args: SGD,
    scalars: { lr: 1, nesterov: true },
    code: 'TANDEM_ERR_INVALID_ARGUMENT',
  },
  {
    why: 'buf dtype differs',
    op: 'sgd',
    args: { ...SGD, buf: desc([4, 5], 'bf16') },
    scalars: { lr: 1 },
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'f32 acc for f64 x',
    op: 'sumsq',
    args: { x: desc([3], 'f64'), acc: desc([1], 'f32') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
  {
    why: 'integer x',
    op: 'sumsq',
    args: { x: desc([3], 'i32'), acc: desc([1], 'f32') },
    scalars: {},
    code: 'TANDEM_ERR_DTYPE',
  },
];

describe('optim validation', () => {
  for (const bad of BAD) {
    it(`${bad.op}: ${bad.why} -> ${bad.code}`, () => {
      assert.throws(
        () => defOf(bad.op).validate(bad.args, bad.scalars),
        (e: unknown) => isTandemError(e, bad.code) && e.message.includes(`${bad.op}:`),
      );
    });
  }
  it('accepts well-formed calls', () => {
    defOf('adamw').validate(ADAM, { lr: 1e-3, step: 1 });
    defOf('adamw_mixed').validate(
      { ...ADAM, p: desc([4, 5], 'bf16'), g: desc([4, 5], 'bf16'), master: P },
      { lr: 1e-3, step: 3, maxNorm: 1, skipNonFinite: true },
    );
    defOf('sgd').validate(SGD, { lr: 0.1, momentum: 0.9, nesterov: true });
    defOf('sumsq').validate({ x: desc([3], 'bf16'), acc: desc([1], 'f32') }, {});
  });
});
