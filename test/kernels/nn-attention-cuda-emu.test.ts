/**
 * The attention CUDA kernels (both paths: tensor cores and CUDA cores) executed on the host emulator
 * (cuda-emu/): the real kernel text, launch geometry, parameters and path choice, against the float64
 * references, on a machine without a GPU. The emulated mma.sync / ldmatrix follow the PTX ISA's fragment
 * layouts, so this checks the kernels' indexing, masking, tiling and online softmax; the GPU tests
 * (test/gpu/nn-attention.test.ts, cuda-conformance) check the hardware itself.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type DType,
  bytesPerElement,
  epsilon,
  fromNumbers,
  hostView,
  toNumbers,
} from '../../src/core/dtype.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import type { TensorDesc } from '../../src/devices/device.js';
import {
  ATTENTION_FORWARD_MMA_FA2,
  ATTENTION_FORWARD_MMA_V1,
  type AttentionPath,
  attentionCudaPath,
} from '../../src/kernels/attention/cuda.js';
import { attentionDims, lseDType } from '../../src/kernels/attention/params.js';
import { attentionForward } from '../../src/kernels/attention/reference.js';
import {
  ATTENTION_BWD_MMA_V4,
  ATTENTION_DKDV_MMA_V1,
  ATTENTION_DQ_MMA_V1,
  attentionBackwardCudaPath,
} from '../../src/kernels/attention_backward/cuda.js';
import { attentionBackwardValues } from '../../src/kernels/attention_backward/reference.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip attention CUDA emulation: ${unavailable}`);

function desc(shape: number[], dtype: DType): TensorDesc {
  return { shape, dtype, bytes: shape.reduce((a, b) => a * b, 1) * bytesPerElement(dtype) };
}

function bytesOf(dtype: DType, values: Float64Array): Uint8Array {
  const out = hostView(dtype, new ArrayBuffer(values.length * bytesPerElement(dtype)), 0, values.length);
  fromNumbers(dtype, values, out);
  return new Uint8Array(out.buffer);
}

function valuesOf(dtype: DType, bytes: Uint8Array): Float64Array {
  const copy = Uint8Array.from(bytes);
  return toNumbers(dtype, hostView(dtype, copy.buffer, 0, bytes.length / bytesPerElement(dtype)));
}

/** max |got − want| / max |want|; NaN anywhere gives Infinity. */
function relError(got: Float64Array, want: Float64Array): number {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!);
    err = Number.isNaN(e) ? Infinity : Math.max(err, e);
    scale = Math.max(scale, Math.abs(want[i]!));
  }
  return err / scale;
}

/** Rounding of the output (and of P, dS on tensor cores) dominates: a few units of the storage dtype. */
const TOLERANCE: Record<string, number> = {
  bf16: 2 * epsilon('bf16'),
  f16: 4 * epsilon('f16'),
  f32: 1e-5,
  f64: 1e-12,
};

interface Config {
  readonly shape: readonly [number, number, number, number];
  readonly dtype: DType;
  readonly path: AttentionPath;
  /** Whether the tensor-core kernels must be the ones launched. */
  readonly mma: boolean;
}

const CONFIGS: readonly Config[] = [
  // The default path: v5 on sm_90.
  { shape: [1, 70, 2, 32], dtype: 'bf16', path: 'auto', mma: true },
  // The opt-in v1 (ldmatrix.x4, ex2.approx): both head dims it takes, both 16-bit types, ragged T.
  { shape: [1, 70, 2, 32], dtype: 'f16', path: 'tensor-core-v1', mma: true },
  { shape: [1, 135, 1, 64], dtype: 'bf16', path: 'tensor-core-v1', mma: true },
  // v2: v1's forward and the single-pass backward (dQ accumulated by atomics, 64 KiB-class dynamic smem).
  { shape: [1, 135, 1, 64], dtype: 'bf16', path: 'tensor-core-v2', mma: true },
  { shape: [2, 70, 2, 32], dtype: 'f16', path: 'tensor-core-v2', mma: true },
  // v3: the FA2-style forward (128-key tiles, Q re-read from shared memory) with v2's backward; T = 300
  // crosses a 128-key tile and its 64-key diagonal case.
  { shape: [1, 300, 1, 64], dtype: 'bf16', path: 'tensor-core-v3', mma: true },
  { shape: [1, 135, 2, 32], dtype: 'f16', path: 'tensor-core-v3', mma: true },
  // v4: v3 with the single pass in halves (K, V fragments from shared memory, 3 blocks an SM).
  { shape: [1, 135, 1, 64], dtype: 'bf16', path: 'tensor-core-v4', mma: true },
  { shape: [2, 70, 2, 32], dtype: 'f16', path: 'tensor-core-v4', mma: true },
  // v5: the FA2-style forward with v0's backward (no ATTN_V1 in the backward's kernels).
  { shape: [1, 300, 1, 64], dtype: 'bf16', path: 'tensor-core-v5', mma: true },
  { shape: [2, 70, 2, 32], dtype: 'f16', path: 'tensor-core-v5', mma: true },
  { shape: [1, 37, 2, 12], dtype: 'f32', path: 'auto', mma: false },
  { shape: [2, 19, 1, 8], dtype: 'f64', path: 'auto', mma: false },
];

void describe('attention CUDA kernels on the host emulator', { skip: unavailable ?? false }, () => {
  for (const { shape, dtype, path, mma } of CONFIGS) {
    const [B, T, H, hd] = shape;
    const C = H * hd;
    const scalars = { heads: H };
    const name = `${dtype} B${B} T${T} H${H} d${hd}, ${path} path`;
    void it(name, () => {
      const rnd = seededRandom(9);
      const lseT = lseDType(dtype);
      const qkvBytes = bytesOf(
        dtype,
        Float64Array.from({ length: B * T * 3 * C }, () => 2 * rnd() - 1),
      );
      const dyBytes = bytesOf(
        dtype,
        Float64Array.from({ length: B * T * C }, () => 2 * rnd() - 1),
      );
      const qkv = valuesOf(dtype, qkvBytes);
      const dy = valuesOf(dtype, dyBytes);
      const d = attentionDims('attention', desc([B, T, 3 * C], dtype), scalars);
      const ref = attentionForward(d, qkv);
      const nan = (n: number, t: DType): Uint8Array => bytesOf(t, new Float64Array(n).fill(NaN));

      const fwd = runNativeOnHost(
        attentionCudaPath(path),
        [desc([B, T, 3 * C], dtype), desc([B, T, C], dtype), desc([B, H, T], lseT)],
        [qkvBytes, nan(B * T * C, dtype), nan(B * H * T, lseT)],
        scalars,
      );
      const tol = TOLERANCE[dtype]!;
      const suffix = mma ? '_mma' : '';
      assert.deepEqual(fwd.entries, [`tdm_attn_fwd${suffix}`]);
      const v1 = path === 'tensor-core-v1';
      const v4 = path === 'tensor-core-v4';
      // 'auto' on the emulator's sm_90 is v5 (defaultMmaVersion), where the tensor cores take the call.
      const v5 = path === 'tensor-core-v5' || (path === 'auto' && mma);
      const v3 = path === 'tensor-core-v3' || v4;
      const v2 = path === 'tensor-core-v2' || v3;
      assert.equal(fwd.programs[0] === ATTENTION_FORWARD_MMA_V1, v1 || (v2 && !v3), 'v1 only when asked for');
      assert.equal(
        fwd.programs[0] === ATTENTION_FORWARD_MMA_FA2,
        v3 || v5,
        'the FA2-style forward: v3 to v5',
      );
      const yErr = relError(valuesOf(dtype, fwd.outputs[1]!), ref.y);
      assert.ok(yErr <= tol, `y: relative error ${yErr} > ${tol}`);
      const lseErr = relError(valuesOf(lseT, fwd.outputs[2]!), ref.lse);
      assert.ok(lseErr <= Math.max(tol, 1e-6), `lse: relative error ${lseErr}`);

      const yBytes = bytesOf(dtype, ref.y);
      const lseBytes = bytesOf(lseT, ref.lse);
      const want = attentionBackwardValues(d, dy, qkv, valuesOf(dtype, yBytes), valuesOf(lseT, lseBytes));
      const bwd = runNativeOnHost(
        attentionBackwardCudaPath(path),
        [
          desc([B, T, C], dtype),
          desc([B, T, 3 * C], dtype),
          desc([B, T, C], dtype),
          desc([B, H, T], lseT),
          desc([B, T, 3 * C], dtype),
        ],
        [dyBytes, qkvBytes, yBytes, lseBytes, nan(B * T * 3 * C, dtype)],
        scalars,
      );
      if (v2) assert.deepEqual(bwd.entries, ['tdm_attn_bwd_prep', 'tdm_attn_bwd_mma', 'tdm_attn_dq_convert']);
      if (v2) assert.equal(bwd.programs[1] === ATTENTION_BWD_MMA_V4, v4, 'the halves kernel only for v4');
      else {
        assert.deepEqual(bwd.entries, [
          `tdm_attn_delta${suffix}`,
          `tdm_attn_dkdv${suffix}`,
          `tdm_attn_dq${suffix}`,
        ]);
        assert.deepEqual(
          bwd.programs.slice(1).map((p) => p === ATTENTION_DKDV_MMA_V1 || p === ATTENTION_DQ_MMA_V1),
          [v1, v1],
        );
      }
      const got = valuesOf(dtype, bwd.outputs[4]!);
      ['dq', 'dk', 'dv'].forEach((part, p) => {
        const pick = (x: Float64Array): Float64Array =>
          Float64Array.from({ length: B * T * C }, (_, i) => x[Math.floor(i / C) * 3 * C + p * C + (i % C)]!);
        const err = relError(pick(got), pick(want));
        assert.ok(err <= tol, `${part}: relative error ${err} > ${tol}`);
      });
    });
  }
});
