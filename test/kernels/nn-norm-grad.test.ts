/**
 * Gradient checks of the norm group: every backward reference (float64) against central finite
 * differences of the forward reference, through a scalar loss L = Σ upstream · output. The CPU
 * implementations are checked against these references by the conformance cases.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { numel } from '../../src/core/shape.js';
import type { Scalars } from '../../src/devices/device.js';
import type { RefArg, ReferenceFn } from '../../src/kernels/common/reference.js';
import { REFERENCES } from '../../src/kernels/references.js';

const rnd = seededRandom(42);
const H = 1e-6;

function arg(shape: number[], values: Float64Array, dtype: 'f64' | 'i32' = 'f64'): RefArg {
  return { desc: { shape, dtype, bytes: numel(shape) * 8 }, values };
}

function random(n: number, lo = -1, hi = 1): Float64Array {
  return Float64Array.from({ length: n }, () => lo + (hi - lo) * rnd());
}

function ref(op: string): ReferenceFn {
  const f = REFERENCES[op];
  if (f === undefined) throw new Error(`no reference for ${op}`);
  return f;
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * dL/d(args[name]) by central differences, L = Σ_o Σ upstream[o] · forward(args)[o] (outputs o with
 * an upstream gradient).
 */
function numericGrad(
  op: string,
  args: Record<string, RefArg>,
  scalars: Scalars,
  upstream: Record<string, Float64Array>,
  name: string,
): Float64Array {
  const loss = (): number => {
    const out = ref(op)(args, scalars);
    return Object.entries(upstream).reduce((s, [o, g]) => s + dot(out[o]!, g), 0);
  };
  const v = args[name]!.values;
  const g = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const keep = v[i]!;
    v[i] = keep + H;
    const up = loss();
    v[i] = keep - H;
    const down = loss();
    v[i] = keep;
    g[i] = (up - down) / (2 * H);
  }
  return g;
}

function assertClose(got: Float64Array, want: Float64Array, what: string, tol = 1e-6): void {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i]! - want[i]!);
    assert.ok(
      err <= tol * (1 + Math.abs(want[i]!)),
      `${what}[${i}] = ${got[i]}, finite differences ${want[i]}`,
    );
  }
}

void describe('norm group gradient checks (float64 references vs central differences)', () => {
  const [rows, cols] = [5, 7];
  const shape = [rows, cols];

  void it('layernorm_backward: dx, dw, db', () => {
    const x = arg(shape, random(rows * cols, -2, 2));
    const w = arg([cols], random(cols, 0.5, 1.5));
    const b = arg([cols], random(cols));
    const scalars = { eps: 1e-3 };
    const dy = random(rows * cols);
    const fwd = ref('layernorm')({ x, w, b }, scalars);
    const back = ref('layernorm_backward')(
      {
        dy: arg(shape, dy),
        x,
        w,
        mean: arg([rows], fwd.mean!),
        rstd: arg([rows], fwd.rstd!),
        dx: arg(shape, new Float64Array(rows * cols)),
        dw: arg([cols], new Float64Array(cols)),
        db: arg([cols], new Float64Array(cols)),
      },
      {},
    );
    for (const [g, p] of [
      ['dx', 'x'],
      ['dw', 'w'],
      ['db', 'b'],
    ] as const) {
      assertClose(back[g]!, numericGrad('layernorm', { x, w, b }, scalars, { y: dy }, p), g);
    }
  });

  void it('layernorm_backward accumulates: the result is the old contents plus the gradient', () => {
    const x = arg(shape, random(rows * cols));
    const w = arg([cols], random(cols));
    const fwd = ref('layernorm')({ x, w, b: arg([cols], random(cols)) }, {});
    const base = {
      dy: arg(shape, random(rows * cols)),
      x,
      w,
      mean: arg([rows], fwd.mean!),
      rstd: arg([rows], fwd.rstd!),
    };
    const old = { dx: random(rows * cols), dw: random(cols), db: random(cols) };
    const zero = {
      dx: new Float64Array(rows * cols),
      dw: new Float64Array(cols),
      db: new Float64Array(cols),
    };
    const fresh = ref('layernorm_backward')(
      { ...base, dx: arg(shape, zero.dx), dw: arg([cols], zero.dw), db: arg([cols], zero.db) },
      {},
    );
    const added = ref('layernorm_backward')(
      { ...base, dx: arg(shape, old.dx), dw: arg([cols], old.dw), db: arg([cols], old.db) },
      { accumulate: true, accumulateDx: true },
    );
    for (const g of ['dx', 'dw', 'db'] as const) {
      assertClose(
        added[g]!,
        fresh[g]!.map((v, i) => v + old[g][i]!),
        g,
        1e-12,
      );
    }
  });

  void it('residual_layernorm: da = dr = ds + layernorm_backward(dy) with accumulateDx', () => {
    const a = arg(shape, random(rows * cols));
    const r = arg(shape, random(rows * cols));
    const w = arg([cols], random(cols, 0.5, 1.5));
    const b = arg([cols], random(cols));
    const dy = random(rows * cols);
    const ds = random(rows * cols);
    const fwd = ref('residual_layernorm')({ a, r, w, b }, {});
    const back = ref('layernorm_backward')(
      {
        dy: arg(shape, dy),
        x: arg(shape, fwd.s!),
        w,
        mean: arg([rows], fwd.mean!),
        rstd: arg([rows], fwd.rstd!),
        dx: arg(shape, ds.slice()),
        dw: arg([cols], new Float64Array(cols)),
        db: arg([cols], new Float64Array(cols)),
      },
      { accumulateDx: true },
    );
    const upstream = { y: dy, s: ds };
    assertClose(back.dx!, numericGrad('residual_layernorm', { a, r, w, b }, {}, upstream, 'a'), 'da');
    assertClose(back.dx!, numericGrad('residual_layernorm', { a, r, w, b }, {}, upstream, 'r'), 'dr');
    assertClose(back.dw!, numericGrad('residual_layernorm', { a, r, w, b }, {}, upstream, 'w'), 'dw');
  });

  void it('embedding_backward: dwte (repeated ids sum, unused rows 0) and dwpe', () => {
    const [batch, steps, c, vocab, positions] = [3, 4, 5, 6, 7];
    // Id 1 appears three times, ids 4 and 5 never.
    const ids = arg([batch, steps], Float64Array.from([1, 0, 2, 1, 3, 1, 0, 2, 3, 3, 0, 2]), 'i32');
    const wte = arg([vocab, c], random(vocab * c));
    const wpe = arg([positions, c], random(positions * c));
    const dy = random(batch * steps * c);
    const back = ref('embedding_backward')(
      {
        ids,
        dy: arg([batch, steps, c], dy),
        dwte: arg([vocab, c], random(vocab * c)),
        dwpe: arg([positions, c], random(positions * c)),
      },
      {},
    );
    const fwdArgs = { ids, wte, wpe };
    assertClose(back.dwte!, numericGrad('embedding', fwdArgs, {}, { y: dy }, 'wte'), 'dwte');
    assertClose(back.dwpe!, numericGrad('embedding', fwdArgs, {}, { y: dy }, 'wpe'), 'dwpe');
    assert.ok(
      back.dwte!.subarray(4 * c).every((v) => v === 0),
      'unused rows are 0',
    );
  });

  void it('softmax_xent: the written logits are gradScale × d(Σ losses)/d(logits), padding and t = -1 rows 0', () => {
    const [m, vocab, padded] = [6, 9, 12];
    const logits = arg([m, padded], random(m * padded, -3, 3));
    const targets = arg([m], Float64Array.from([3, -1, 0, 8, 5, -1]), 'i32');
    const gradScale = 0.37;
    const scalars = { vocab, gradScale, backward: true };
    const out = ref('softmax_xent')({ logits, targets }, scalars);
    const numeric = numericGrad(
      'softmax_xent',
      { logits, targets },
      scalars,
      { losses: new Float64Array(m).fill(1) },
      'logits',
    );
    assertClose(
      out.logits!,
      numeric.map((g) => gradScale * g),
      'dlogits',
    );
    for (const i of [1, 5]) assert.equal(out.losses![i], 0, 'ignored row has loss 0');
    assert.ok(
      out.logits!.subarray(padded, 2 * padded).every((v) => v === 0),
      'ignored row has gradient 0',
    );
    for (let i = 0; i < m; i++) {
      assert.ok(
        out.logits!.subarray(i * padded + vocab, (i + 1) * padded).every((v) => v === 0),
        'padding is 0',
      );
    }
  });

  void it('dropout_backward: dx = d(Σ dy·dropout(x))/dx with the same (p, seed, offset)', () => {
    const n = 37;
    const scalars = { p: 0.4, seed: 77, offset: 5 };
    const x = arg([n], random(n));
    const dy = random(n);
    const back = ref('dropout_backward')({ dy: arg([n], dy), dx: arg([n], random(n)) }, scalars);
    const numeric = numericGrad('dropout', { x }, scalars, { y: dy }, 'x');
    assertClose(back.dx!, numeric, 'dx');
    assert.ok(
      numeric.some((g) => g === 0) && numeric.some((g) => g !== 0),
      'some elements dropped, some kept',
    );
  });
});
