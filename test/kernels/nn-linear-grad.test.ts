/**
 * Gradient checks of the linear group: each backward op's float64 reference against central finite
 * differences of the forward references (linear, activation) in float64, on random non-zero inputs
 * kept away from relu's kink. A scalar loss L = Σ dy ⊙ forward(…) makes the backward op's result the
 * exact gradient of L, so every element of it is compared with (L(v + h) − L(v − h)) / 2h.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import type { Scalars } from '../../src/devices/device.js';
import type { RefArg } from '../../src/kernels/common/reference.js';
import { REFERENCES } from '../../src/kernels/references.js';
import { GELU_CUBIC, GELU_SCALE, gelu } from '../../src/kernels/activation/ops.js';

const H = 1e-6;
/** Central differences in f64 with h = 1e-6 are good to about 1e-9 relative on these smooth sums. */
const TOL = 1e-7;

function random(n: number, rnd: () => number): Float64Array {
  return Float64Array.from({ length: n }, () => (rnd() < 0.5 ? -1 : 1) * (0.125 + 0.875 * rnd()));
}

function arg(shape: number[], values: Float64Array): RefArg {
  return { desc: { shape, dtype: 'f64', bytes: 8 * values.length }, values };
}

function run(op: string, args: Record<string, RefArg>, scalars: Scalars): Record<string, Float64Array> {
  return REFERENCES[op]!(args, scalars);
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Central difference of `loss` with respect to every element of `v` (perturbed in place, restored). */
function numericGrad(v: Float64Array, loss: () => number): Float64Array {
  const g = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const old = v[i]!;
    v[i] = old + H;
    const up = loss();
    v[i] = old - H;
    const down = loss();
    v[i] = old;
    g[i] = (up - down) / (2 * H);
  }
  return g;
}

function assertClose(got: Float64Array, want: Float64Array, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i]! - want[i]!);
    assert.ok(
      err <= TOL * (1 + Math.abs(want[i]!)),
      `${what}[${i}]: ${got[i]} vs finite difference ${want[i]}`,
    );
  }
}

const [M, K, N] = [5, 7, 3];

for (const act of ['gelu', 'relu'] as const) {
  void describe(`nn linear gradients, ${act}`, () => {
    void it('activation_backward is the gradient of Σ dy ⊙ activation(x), and accumulate adds it', () => {
      const rnd = seededRandom(11);
      const x = random(40, rnd);
      const dy = random(40, rnd);
      const old = random(40, rnd);
      const loss = (): number =>
        dot(dy, run('activation', { x: arg([40], x), y: arg([40], x) }, { op: act }).y!);
      const want = numericGrad(x, loss);
      const args = { x: arg([40], x), dy: arg([40], dy), dx: arg([40], old) };
      assertClose(run('activation_backward', args, { op: act }).dx!, want, 'dx');
      const summed = run('activation_backward', args, { op: act, accumulate: true }).dx!;
      assertClose(
        summed,
        want.map((v, i) => v + old[i]!),
        'dx accumulated',
      );
    });

    void it('linear_dx_act is the gradient at pre of Σ dy ⊙ linear(act(pre), w, b)', () => {
      const rnd = seededRandom(12);
      const pre = random(M * K, rnd);
      const w = random(N * K, rnd);
      const b = random(N, rnd);
      const dy = random(M * N, rnd);
      const loss = (): number => {
        const h = run('activation', { x: arg([M, K], pre), y: arg([M, K], pre) }, { op: act }).y!;
        const y = run(
          'linear',
          { x: arg([M, K], h), w: arg([N, K], w), b: arg([N], b), y: arg([M, N], dy) },
          {},
        ).y!;
        return dot(dy, y);
      };
      const want = numericGrad(pre, loss);
      const got = run(
        'linear_dx_act',
        { dy: arg([M, N], dy), w: arg([N, K], w), pre: arg([M, K], pre), dx: arg([M, K], pre) },
        { act },
      ).dx!;
      assertClose(got, want, 'dx');
    });

    void it('linear_act: y is act(pre) and pre is linear(x, w, b)', () => {
      const rnd = seededRandom(13);
      const x = random(M * K, rnd);
      const w = random(N * K, rnd);
      const b = random(N, rnd);
      const out = arg([M, N], new Float64Array(M * N));
      const args = { x: arg([M, K], x), w: arg([N, K], w), b: arg([N], b) };
      const got = run('linear_act', { ...args, pre: out, y: out }, { act });
      assertClose(got.pre!, run('linear', { ...args, y: out }, {}).y!, 'pre');
      assertClose(got.y!, run('activation', { x: arg([M, N], got.pre!), y: out }, { op: act }).y!, 'y');
    });
  });
}

void describe('nn linear gradients, weights and bias', () => {
  for (const accumulate of [false, true]) {
    void it(`linear_dw is the gradient of Σ dy ⊙ linear(x, w, b) in w and b${accumulate ? ', accumulated' : ''}`, () => {
      const rnd = seededRandom(14);
      const x = random(M * K, rnd);
      const w = random(N * K, rnd);
      const b = random(N, rnd);
      const dy = random(M * N, rnd);
      const oldW = random(N * K, rnd);
      const oldB = random(N, rnd);
      const loss = (): number =>
        dot(
          dy,
          run('linear', { x: arg([M, K], x), w: arg([N, K], w), b: arg([N], b), y: arg([M, N], dy) }, {}).y!,
        );
      const wantW = numericGrad(w, loss);
      const wantB = numericGrad(b, loss);
      const got = run(
        'linear_dw',
        { dy: arg([M, N], dy), x: arg([M, K], x), dw: arg([N, K], oldW), db: arg([N], oldB) },
        { accumulate },
      );
      assertClose(got.dw!, accumulate ? wantW.map((v, i) => v + oldW[i]!) : wantW, 'dw');
      assertClose(got.db!, accumulate ? wantB.map((v, i) => v + oldB[i]!) : wantB, 'db');
    });
  }
});

void describe('nn linear activations', () => {
  it("gelu is PyTorch's tanh form: x·σ(2u), u = √(2/π)(x + 0.044715x³)", () => {
    assert.equal(GELU_SCALE, 0.7978845608028654);
    assert.equal(GELU_CUBIC, 0.044715);
    for (const x of [-3, -1, -0.5, 0.25, 1, 2.5]) {
      const u = 0.7978845608028654 * (x + 0.044715 * x ** 3);
      const want = x / (1 + Math.exp(-2 * u));
      assert.ok(Math.abs(gelu(x) - want) <= 1e-15, `gelu(${x}) = ${gelu(x)}, want ${want}`);
    }
  });
});
