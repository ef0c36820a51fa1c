/**
 * How CublasLt applies a Tuner's choice (src/devices/cuda/ffi/cublaslt.ts), over a stand-in for the
 * library's functions: which algorithm later calls enqueue, that a shape tuned to the caller's
 * alternative (cublasGemmEx) enqueues nothing and says so, that a declined tuning leaves the shape
 * pending, and what `tuned` records. The timing itself runs on a GPU (test/gpu/lt-autotune.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CublasLt, type LtShape, type Tuner } from '../../src/devices/cuda/ffi/cublaslt.js';
import type { KoffiLib } from '../../src/devices/cuda/ffi/loader.js';

const RESULT_BYTES = 96; // sizeof(cublasLtMatmulHeuristicResult_t)
const RETURNED = 3; // algorithms the stand-in heuristic offers, numbered 1..3 in their first byte

/** The stand-in library: every call succeeds; cublasLtMatmul notes the algorithm it was given. */
function fakeLt(): { lt: CublasLt; enqueued: number[] } {
  const enqueued: number[] = [];
  let handles = 100;
  const out = (o: number[]): number => {
    o[0] = handles++;
    return 0;
  };
  const impl: Record<string, (...args: never[]) => number> = {
    cublasLtCreate: out,
    cublasLtMatmulDescCreate: out,
    cublasLtMatrixLayoutCreate: out,
    cublasLtMatmulPreferenceCreate: out,
    cublasLtMatmulAlgoGetHeuristic: (...args: unknown[]) => {
      const results = args[8] as Uint8Array;
      for (let i = 0; i < RETURNED; i++) results[i * RESULT_BYTES] = i + 1;
      (args[9] as number[])[0] = RETURNED;
      return 0;
    },
    cublasLtMatmul: (...args: unknown[]) => {
      enqueued.push((args[12] as Uint8Array)[0]!);
      return 0;
    },
  };
  const lib = {
    func: (decl: string) => {
      const name = /\b(cublasLt\w+)\(/.exec(decl)![1]!;
      return impl[name] ?? (() => 0);
    },
  } as unknown as KoffiLib;
  return { lt: new CublasLt(lib, 'fake'), enqueued };
}

const SHAPE: LtShape = {
  dataType: 14,
  compute: 68,
  scaleType: 0,
  ta: 0,
  tb: 0,
  m: 768,
  n: 65536,
  k: 2304,
  lda: 768,
  ldb: 2304,
  ldc: 768,
};
const f32 = Float32Array.of(1);

/** A tuner that runs every candidate once (as timing would) and picks `chosen`. */
function pick(chosen: number, seen: number[][]): Tuner {
  return (candidates, run) => {
    seen.push(candidates.map((c) => c.length));
    for (const c of candidates) assert.equal(run(c), 0);
    return { chosen, ms: candidates.map((_, i) => 1 + i) };
  };
}

function call(lt: CublasLt, tuner: Tuner | null, alternative: (() => number) | null): boolean {
  return lt.matmul(SHAPE, f32, 1, 2, f32, 3, 4, 1 << 20, 0, tuner, alternative);
}

void describe('CublasLt tuning choices', () => {
  void it('a shape tuned to the alternative enqueues nothing and returns false from then on', () => {
    const { lt, enqueued } = fakeLt();
    let alternativeRuns = 0;
    const alternative = (): number => {
      alternativeRuns++;
      return 0;
    };
    const seen: number[][] = [];
    assert.equal(call(lt, pick(0, seen), alternative), false);
    // The alternative came first (an empty stand-in), then the heuristic's three algorithms.
    assert.deepEqual(seen, [[0, 64, 64, 64]]);
    assert.equal(alternativeRuns, 1, 'the tuner ran the alternative');
    assert.deepEqual(enqueued, [1, 2, 3], 'only the timing runs reached cuBLASLt');
    assert.equal(call(lt, pick(2, seen), alternative), false, 'decided once');
    assert.equal(seen.length, 1);
    assert.deepEqual(enqueued, [1, 2, 3]);
    const t = lt.tuned.at(-1)!;
    assert.equal(t.alternativeFirst, true);
    assert.equal(t.chosen, 0);
    assert.deepEqual([t.m, t.n, t.k], [768, 65536, 2304]);
    assert.deepEqual(lt.tuning, { shapes: 1, changed: 0 });
  });

  void it('a cuBLASLt algorithm chosen over the alternative is the one enqueued', () => {
    const { lt, enqueued } = fakeLt();
    // Candidates [alternative, 1, 2, 3]: index 2 is the heuristic's second algorithm.
    assert.equal(
      call(lt, pick(2, []), () => 0),
      true,
    );
    assert.deepEqual(enqueued, [1, 2, 3, 2]);
    assert.equal(call(lt, null, null), true);
    assert.deepEqual(enqueued.at(-1), 2);
    assert.deepEqual(lt.tuning, { shapes: 1, changed: 1 });
  });

  void it('without an alternative the candidates are the heuristic algorithms alone', () => {
    const { lt, enqueued } = fakeLt();
    const seen: number[][] = [];
    assert.equal(call(lt, pick(1, seen), null), true);
    assert.deepEqual(seen, [[64, 64, 64]]);
    assert.deepEqual(enqueued, [1, 2, 3, 2]);
    assert.equal(lt.tuned.at(-1)!.alternativeFirst, false);
  });

  void it('a declined tuning leaves the heuristic first in use and the shape pending', () => {
    const { lt, enqueued } = fakeLt();
    assert.equal(
      call(
        lt,
        () => null,
        () => 0,
      ),
      true,
    );
    assert.deepEqual(enqueued, [1], "the heuristic's first");
    assert.equal(lt.tuned.length, 0);
    assert.equal(call(lt, pick(2, []), null), true, 'tuned on a later call');
    assert.deepEqual(enqueued.slice(1), [1, 2, 3, 3]);
  });
});
