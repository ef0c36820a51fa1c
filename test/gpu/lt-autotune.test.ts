/**
 * cuBLASLt autotuning on a real GPU (src/devices/cuda/lt-autotune.ts): a large bf16 linear (bias and
 * GELU epilogues) is timed over the heuristic's candidates once per shape and the result stays right
 * (sampled rows against a float64 reference, outputs poisoned first); an accumulating GEMM through
 * cuBLASLt is never tuned (timing runs would add into its output more than once) and accumulates once;
 * a plain large bf16 gemm is tuned (cublasGemmEx against cuBLASLt's candidates) whatever calibration chose.
 * Skips without a GPU or cuBLASLt, or with TANDEM_LT_AUTOTUNE=0.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bf16ToF32, f32ToBf16 } from '../../src/core/dtype.js';
import type { LaunchArg, TensorDesc } from '../../src/devices/device.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import type { CudaBuffer } from '../../src/devices/cuda/memory-node.js';
import { TUNE_MIN_FLOP } from '../../src/devices/cuda/lt-autotune.js';
import { gelu } from '../../src/kernels/activation/ops.js';
import { cudaDevice, download, hostBuffer, launch, upload } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
const lt = device?.context.cublasLt ?? null;
const skip =
  device === null
    ? reason
    : lt === null
      ? 'cuBLASLt did not load'
      : process.env['TANDEM_LT_AUTOTUNE'] === '0'
        ? 'TANDEM_LT_AUTOTUNE=0'
        : false;
if (skip !== false) console.log(`# skip lt autotune: ${skip}`);

/** m·n·k at the tuning threshold: x [M,K]·w [N,K]ᵀ. */
const M = 8192;
const K = 1024;
const N = 1024;
const ROWS = [0, 1, 777, 4095, 4096, 6001, 8190, 8191];

/** Random bf16 values in ±[2^-4, 1) (never zero), as words and as the floats they stand for. */
function randomBf16(count: number, seed: number): { words: Uint16Array; values: Float32Array } {
  const words = new Uint16Array(count);
  const values = new Float32Array(count);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    const v = (s & 1 ? -1 : 1) * (0.0625 + (s >>> 1) / 2 ** 31 / 1.07);
    words[i] = f32ToBf16(v);
    values[i] = bf16ToF32(words[i]!);
  }
  return { words, values };
}

interface Buf {
  readonly arg: LaunchArg;
  readonly words: number;
}

async function deviceBuffer(dev: CudaDevice, shape: number[], words: Uint16Array): Promise<Buf> {
  const desc: TensorDesc = { shape, dtype: 'bf16', bytes: words.byteLength };
  const host = hostBuffer(words.byteLength);
  new Uint16Array(host.sab, 0, words.length).set(words);
  const buffer = dev.node.alloc(words.byteLength);
  await upload(dev, host, buffer, words.byteLength);
  return { arg: { buffer, desc }, words: words.length };
}

async function read(dev: CudaDevice, b: Buf): Promise<Float32Array> {
  const host = hostBuffer(b.words * 2);
  await download(dev, b.arg.buffer as CudaBuffer, host, b.words * 2);
  const w = new Uint16Array(host.sab, 0, b.words);
  return Float32Array.from(w, (x) => bf16ToF32(x));
}

/** Largest |got − ref| / max|ref| over the sampled rows of an [rows, cols] result. */
function sampledError(
  got: Float32Array,
  cols: number,
  rows: readonly number[],
  ref: (r: number, c: number) => number,
): number {
  let err = 0;
  let scale = 0;
  for (const r of rows)
    for (let c = 0; c < cols; c++) {
      const want = ref(r, c);
      const v = got[r * cols + c]!;
      if (!Number.isFinite(v)) return Infinity; // poison left behind
      err = Math.max(err, Math.abs(v - want));
      scale = Math.max(scale, Math.abs(want));
    }
  return err / scale;
}

void describe('cuBLASLt autotuning (bf16, large shapes)', { skip }, () => {
  const x = randomBf16(M * K, 11);
  const w = randomBf16(N * K, 12);
  const b = randomBf16(N, 13);
  const dot = (r: number, c: number): number => {
    let s = 0;
    for (let q = 0; q < K; q++) s += x.values[r * K + q]! * w.values[c * K + q]!;
    return s;
  };
  const poison = new Uint16Array(M * N).fill(0x7fc1); // bf16 NaN
  const linearInputs = (dev: CudaDevice): Promise<Buf[]> =>
    Promise.all([
      deviceBuffer(dev, [M, K], x.words),
      deviceBuffer(dev, [N, K], w.words),
      deviceBuffer(dev, [N], b.words),
    ]);

  void it('the shape is at the tuning threshold', () => assert.ok(2 * M * N * K >= TUNE_MIN_FLOP));

  void it('linear (bias epilogue): tuned once per shape, right before and after', async () => {
    const dev = device!;
    const [bx, bw, bb] = (await linearInputs(dev)) as [Buf, Buf, Buf];
    const y = await deviceBuffer(dev, [M, N], poison);
    const before = { ...lt!.tuning };
    await launch(dev, 'linear', [bx.arg, bw.arg, bb.arg, y.arg], {});
    assert.equal(lt!.tuning.shapes - before.shapes, 1, 'the first call tunes its shape');
    const ref = (r: number, c: number): number => dot(r, c) + b.values[c]!;
    assert.ok(sampledError(await read(dev, y), N, ROWS, ref) < 1e-2);
    // Again into a poisoned output: the tuned algorithm is kept (no second tuning) and writes it all.
    const y2 = await deviceBuffer(dev, [M, N], poison);
    await launch(dev, 'linear', [bx.arg, bw.arg, bb.arg, y2.arg], {});
    assert.equal(lt!.tuning.shapes - before.shapes, 1, 'no second tuning of the same shape');
    const got = await read(dev, y2);
    assert.ok(sampledError(got, N, ROWS, ref) < 1e-2);
    assert.ok(got.every(Number.isFinite), 'every element written');
    for (const t of [bx, bw, bb, y, y2]) dev.node.free(t.arg.buffer as CudaBuffer);
  });

  void it('linear_act gelu (GELU_AUX_BIAS): tuned, output and pre-activation right', async () => {
    const dev = device!;
    const [bx, bw, bb] = (await linearInputs(dev)) as [Buf, Buf, Buf];
    const pre = await deviceBuffer(dev, [M, N], poison);
    const y = await deviceBuffer(dev, [M, N], poison);
    const before = { ...lt!.tuning };
    await launch(dev, 'linear_act', [bx.arg, bw.arg, bb.arg, pre.arg, y.arg], { act: 'gelu' });
    assert.equal(lt!.tuning.shapes - before.shapes, 1);
    const refPre = (r: number, c: number): number => dot(r, c) + b.values[c]!;
    assert.ok(sampledError(await read(dev, pre), N, ROWS, refPre) < 1e-2);
    assert.ok(sampledError(await read(dev, y), N, ROWS, (r, c) => gelu(refPre(r, c))) < 1e-2);
    for (const t of [bx, bw, bb, pre, y]) dev.node.free(t.arg.buffer as CudaBuffer);
  });

  void it(
    'a plain bf16 gemm (linear_dw) is tuned against cublasGemmEx, though calibration chose cuBLAS',
    { skip: process.env['TANDEM_GEMM_VIA_LT'] === '0' ? 'TANDEM_GEMM_VIA_LT=0' : false },
    async () => {
      const dev = device!;
      const engines = dev.launcher.gemmEngines;
      const saved = engines['bf16'];
      engines['bf16'] = 'cublas';
      try {
        const dy = randomBf16(M * N, 16);
        const [bdy, bx] = await Promise.all([
          deviceBuffer(dev, [M, N], dy.words),
          deviceBuffer(dev, [M, K], x.words),
        ]);
        const dw = await deviceBuffer(dev, [N, K], poison.subarray(0, N * K));
        const db = await deviceBuffer(dev, [N], poison.subarray(0, N));
        const before = { ...lt!.tuning };
        await launch(dev, 'linear_dw', [bdy.arg, bx.arg, dw.arg, db.arg], { accumulate: false });
        assert.equal(lt!.tuning.shapes - before.shapes, 1, 'dW = dyᵀ·x is tuned through cuBLASLt');
        const tuned = lt!.tuned.at(-1)!;
        assert.equal(tuned.alternativeFirst, true, 'cublasGemmEx is the candidate to beat');
        assert.ok(tuned.ms.length >= 2 && Number.isFinite(tuned.ms[0]), 'cublasGemmEx was timed');
        const ref = (r: number, c: number): number => {
          let s = 0;
          for (let q = 0; q < M; q++) s += dy.values[q * N + r]! * x.values[q * K + c]!;
          return s;
        };
        const got = await read(dev, dw);
        assert.ok(got.every(Number.isFinite), 'every element of dW written');
        assert.ok(sampledError(got, K, [0, 5, 511, 1023], ref) < 2e-2);
        const colSum = (_: number, c: number): number => {
          let s = 0;
          for (let q = 0; q < M; q++) s += dy.values[q * N + c]!;
          return s;
        };
        assert.ok(sampledError(await read(dev, db), N, [0], colSum) < 2e-2);
        for (const t of [bdy, bx, dw, db]) dev.node.free(t.arg.buffer as CudaBuffer);
      } finally {
        if (saved === undefined) delete engines['bf16'];
        else engines['bf16'] = saved;
      }
    },
  );

  void it('an accumulating GEMM through cuBLASLt is not tuned and adds its product once', async () => {
    const dev = device!;
    const engines = dev.launcher.gemmEngines;
    const saved = engines['bf16'];
    engines['bf16'] = 'cublaslt';
    try {
      // dW [N,K] += dyᵀ·x with dy [M,N]: the product's m·n·k is N·K·M, the same as the forward.
      const dy = randomBf16(M * N, 14);
      const old = randomBf16(N * K, 15);
      const [bdy, bx] = await Promise.all([
        deviceBuffer(dev, [M, N], dy.words),
        deviceBuffer(dev, [M, K], x.words),
      ]);
      const dw = await deviceBuffer(dev, [N, K], old.words);
      const db = await deviceBuffer(dev, [N], new Uint16Array(N));
      const before = { ...lt!.tuning };
      await launch(dev, 'linear_dw', [bdy.arg, bx.arg, dw.arg, db.arg], { accumulate: true });
      assert.equal(lt!.tuning.shapes - before.shapes, 0, 'beta = 1 is never timed');
      const ref = (r: number, c: number): number => {
        let s = old.values[r * K + c]!;
        for (let q = 0; q < M; q++) s += dy.values[q * N + r]! * x.values[q * K + c]!;
        return s;
      };
      // A product run more than once (timing) would leave dW = old + t·product: far outside 2e-2.
      assert.ok(sampledError(await read(dev, dw), K, [0, 5, 511, 1023], ref) < 2e-2);
      for (const t of [bdy, bx, dw, db]) dev.node.free(t.arg.buffer as CudaBuffer);
    } finally {
      if (saved === undefined) delete engines['bf16'];
      else engines['bf16'] = saved;
    }
  });
});
