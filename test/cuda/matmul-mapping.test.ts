/**
 * The row-major → column-major mapping of ctx.matmul (src/devices/cuda/matmul.ts), checked without a
 * GPU: cuBLASLt is replaced by a column-major model of cublasLtMatmul written from its documented
 * epilogue semantics (BIAS adds bias[row of D]; GELU_AUX_BIAS stores the pre-activation in aux; DGELU
 * multiplies by gelu′(aux); BGRADB writes the sums of op(B) over k per column of D), and every result
 * is compared with the row-major float64 references of the linear ops.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import type { CudaContext } from '../../src/devices/cuda/context.js';
import { LT_EPILOGUE, type LtEpilogueShape } from '../../src/devices/cuda/ffi/cublaslt.js';
import type {
  CudaGemmRequest,
  CudaKernelContext,
  CudaMatmulRequest,
} from '../../src/devices/cuda/kernel-api.js';
import { ltMatmul } from '../../src/devices/cuda/matmul.js';
import { gelu, geluGrad } from '../../src/kernels/activation/ops.js';
import { batchedGemm } from '../../src/kernels/common/cuda-batched-gemm.js';
import { gemmValues } from '../../src/kernels/gemm/reference.js';
import { linearValues } from '../../src/kernels/linear/reference.js';

const mem = new Map<number, Float64Array>();
let nextPtr = 0;
function put(x: Float64Array): number {
  nextPtr += 0x10000; // 256-byte aligned, as device allocations are
  mem.set(nextPtr, x);
  return nextPtr;
}
const at = (p: number): Float64Array => mem.get(p)!;

function random(n: number, seed: number): Float64Array {
  const rnd = seededRandom(seed);
  return Float64Array.from({ length: n }, () => (rnd() < 0.5 ? -1 : 1) * (0.125 + 0.875 * rnd()));
}

/** Column-major cublasLtMatmul with D = C, as documented. */
function modelMatmul(
  s: LtEpilogueShape,
  alpha: number,
  a: number,
  b: number,
  beta: number,
  c: number,
  bias: number,
  aux: number,
): void {
  for (let batch = 0; batch < s.batchCount; batch++) {
    const A = at(a).subarray(batch * s.strideA);
    const B = at(b).subarray(batch * s.strideB);
    const C = at(c).subarray(batch * s.strideC);
    const opA = (i: number, q: number): number => (s.ta === 0 ? A[i + q * s.lda]! : A[q + i * s.lda]!);
    const opB = (q: number, j: number): number => (s.tb === 0 ? B[q + j * s.ldb]! : B[j + q * s.ldb]!);
    for (let j = 0; j < s.n; j++) {
      for (let i = 0; i < s.m; i++) {
        let acc = 0;
        for (let q = 0; q < s.k; q++) acc += opA(i, q) * opB(q, j);
        acc = alpha * acc + (beta === 0 ? 0 : beta * C[i + j * s.ldc]!);
        if (s.epilogue === LT_EPILOGUE.bias) acc += at(bias)[i]!;
        if (s.epilogue === LT_EPILOGUE.geluAuxBias) {
          acc += at(bias)[i]!;
          at(aux)[i + j * s.auxLd] = acc;
          acc = gelu(acc);
        }
        if (s.epilogue === LT_EPILOGUE.dgelu) acc *= geluGrad(at(aux)[i + j * s.auxLd]!);
        C[i + j * s.ldc] = acc;
      }
      if (s.epilogue === LT_EPILOGUE.bgradb) {
        let sum = 0;
        for (let q = 0; q < s.k; q++) sum += opB(q, j);
        at(bias)[j] = sum;
      }
    }
  }
}

let calls = 0;
const context = {
  workspace: 0,
  makeCurrent: () => undefined,
  cublasLt: {
    matmulEpilogue(
      s: LtEpilogueShape,
      al: Float32Array,
      a: number,
      b: number,
      be: Float32Array,
      c: number,
      bias: number,
      aux: number,
    ): boolean {
      calls++;
      modelMatmul(s, al[0]!, a, b, be[0]!, c, bias, aux);
      return true;
    },
  },
} as unknown as CudaContext;

function close(got: Float64Array, want: Float64Array, what: string): void {
  assert.equal(got.length, want.length);
  // The model runs in float64, but alpha and beta pass through Float32Array (exact for 1 and 0).
  for (let i = 0; i < want.length; i++)
    assert.ok(Math.abs(got[i]! - want[i]!) <= 1e-12, `${what}[${i}]: ${got[i]} vs ${want[i]}`);
}

const [M, K, N] = [5, 16, 8];
const base = { dtype: 'bf16', alpha: 1, beta: 0 } as const;

void describe('ctx.matmul row-major mapping onto cuBLASLt', () => {
  void it("'bias': y = x·wᵀ + b", () => {
    const [x, w, b] = [random(M * K, 1), random(N * K, 2), random(N, 3)];
    const y = put(new Float64Array(M * N).fill(NaN));
    const req: CudaMatmulRequest = {
      ...base,
      transA: false,
      transB: true,
      m: M,
      n: N,
      k: K,
      a: put(x),
      b: put(w),
      c: y,
      epilogue: 'bias',
      bias: put(b),
    };
    assert.equal(ltMatmul(context, req, 0), true);
    close(at(y), linearValues(x, w, b, M, N, K), 'y');
  });

  void it("'gelu_aux_bias': pre = x·wᵀ + b in aux, y = gelu(pre)", () => {
    const [x, w, b] = [random(M * K, 4), random(N * K, 5), random(N, 6)];
    const [y, pre] = [put(new Float64Array(M * N)), put(new Float64Array(M * N))];
    const req: CudaMatmulRequest = {
      ...base,
      transA: false,
      transB: true,
      m: M,
      n: N,
      k: K,
      a: put(x),
      b: put(w),
      c: y,
      epilogue: 'gelu_aux_bias',
      bias: put(b),
      aux: pre,
    };
    assert.equal(ltMatmul(context, req, 0), true);
    const want = linearValues(x, w, b, M, N, K);
    close(at(pre), want, 'pre');
    close(at(y), want.map(gelu), 'y');
  });

  void it("'dgelu': dx = gelu′(pre) ⊙ dy·w", () => {
    const [dy, w, pre] = [random(M * N, 7), random(N * K, 8), random(M * K, 9)];
    const dx = put(new Float64Array(M * K));
    const req: CudaMatmulRequest = {
      ...base,
      transA: false,
      transB: false,
      m: M,
      n: K,
      k: N,
      a: put(dy),
      b: put(w),
      c: dx,
      epilogue: 'dgelu',
      aux: put(pre),
    };
    assert.equal(ltMatmul(context, req, 0), true);
    const t = gemmValues(dy, w, null, M, K, N, { alpha: 1, beta: 0, transA: false, transB: false });
    close(
      at(dx),
      t.map((v, i) => geluGrad(pre[i]!) * v),
      'dx',
    );
  });

  void it("'bgrad': dw = dyᵀ·x and db = column sums of dy", () => {
    const [dy, x] = [random(M * N, 10), random(M * K, 11)];
    const [dw, db] = [put(new Float64Array(N * K)), put(new Float64Array(N))];
    const req: CudaMatmulRequest = {
      ...base,
      transA: true,
      transB: false,
      m: N,
      n: K,
      k: M,
      a: put(dy),
      b: put(x),
      c: dw,
      epilogue: 'bgrad',
      bias: db,
    };
    assert.equal(ltMatmul(context, req, 0), true);
    close(at(dw), gemmValues(dy, x, null, N, K, M, { alpha: 1, beta: 0, transA: true, transB: false }), 'dw');
    const sums = new Float64Array(N);
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) sums[j]! += dy[i * N + j]!;
    close(at(db), sums, 'db');
  });

  void it('a strided batch runs each product at its offsets', () => {
    const count = 3;
    const [a, b] = [random(count * M * K, 12), random(count * K * N, 13)];
    const c = put(new Float64Array(count * M * N));
    const batch = { count, strideA: M * K, strideB: K * N, strideC: M * N };
    const req: CudaMatmulRequest = {
      ...base,
      transA: false,
      transB: false,
      m: M,
      n: N,
      k: K,
      a: put(a),
      b: put(b),
      c,
      epilogue: 'none',
      batch,
    };
    assert.equal(ltMatmul(context, req, 0), true);
    for (let i = 0; i < count; i++) {
      const want = gemmValues(a.subarray(i * M * K), b.subarray(i * K * N), null, M, N, K, {
        alpha: 1,
        beta: 0,
        transA: false,
        transB: false,
      });
      close(at(c).subarray(i * M * N, (i + 1) * M * N), want, `c batch ${i}`);
    }
  });

  void it('declines, enqueuing nothing, what cuBLASLt cannot take', () => {
    const before = calls;
    const p = put(new Float64Array(64));
    const gelu7 = {
      ...base,
      transA: false,
      transB: true,
      m: 4,
      n: 7,
      k: 8,
      a: p,
      b: p,
      c: p,
      epilogue: 'gelu_aux_bias',
      bias: p,
      aux: p,
    } as const;
    assert.equal(ltMatmul(context, gelu7, 0), false, 'aux leading dimension not a multiple of 8');
    assert.equal(ltMatmul(context, { ...gelu7, n: 8, dtype: 'f64' }, 0), false, 'f64');
    assert.equal(ltMatmul(context, { ...gelu7, n: 8, k: 0 }, 0), false, 'k = 0');
    assert.equal(ltMatmul(context, { ...gelu7, n: 8, aux: p + 2 }, 0), false, 'misaligned aux');
    assert.equal(ltMatmul(context, { ...gelu7, n: 8, aux: 0 }, 0), false, 'missing aux');
    const batch = { count: 2, strideA: 1, strideB: 1, strideC: 1 };
    assert.equal(ltMatmul(context, { ...gelu7, n: 8, batch }, 0), false, 'batch with an epilogue');
    const noLt = { ...context, cublasLt: null } as unknown as CudaContext;
    assert.equal(ltMatmul(noLt, { ...gelu7, n: 8 }, 0), false, 'no cuBLASLt');
    assert.equal(calls, before);
  });
});

void describe('batchedGemm (src/kernels/common/cuda-batched-gemm.ts)', () => {
  const req = {
    ...base,
    dtype: 'f64',
    precision: 'default',
    transA: false,
    transB: false,
    m: 2,
    n: 3,
    k: 4,
    a: 1000,
    b: 2000,
    c: 3000,
  } as const;
  const batch = { count: 3, strideA: 8, strideB: 12, strideC: 6 };

  void it('one cuBLASLt call when ctx.matmul takes the batch', () => {
    const gemms: CudaGemmRequest[] = [];
    const matmuls: CudaMatmulRequest[] = [];
    const ctx = {
      matmul: (r: CudaMatmulRequest) => (matmuls.push(r), true),
      gemm: (r: CudaGemmRequest) => gemms.push(r),
    };
    batchedGemm(ctx as unknown as CudaKernelContext, req, batch);
    assert.equal(matmuls.length, 1);
    assert.deepEqual(matmuls[0]!.batch, batch);
    assert.equal(gemms.length, 0);
  });

  void it('one ctx.gemm per product at byte offsets when it does not', () => {
    const gemms: CudaGemmRequest[] = [];
    const ctx = { matmul: () => false, gemm: (r: CudaGemmRequest) => gemms.push(r) };
    batchedGemm(ctx as unknown as CudaKernelContext, req, batch);
    assert.deepEqual(
      gemms.map((g) => [g.a, g.b, g.c]),
      [0, 1, 2].map((i) => [1000 + i * 8 * 8, 2000 + i * 12 * 8, 3000 + i * 6 * 8]),
    );
  });
});
