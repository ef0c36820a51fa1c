/**
 * attention and attention_backward on CUDA at a real size (B = 2, H = 2, T = 1024, d = 64, bf16), each
 * kernel path forced in turn (tensor cores, their opt-in v1 to v5, CUDA cores) and the automatic choice, against the float64
 * references. The backward gets y and lse from the reference forward, as in training, so its result is
 * the true gradient. The small odd shapes and the other dtypes run in cuda-conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  type DType,
  type HostArray,
  bytesPerElement,
  fromNumbers,
  hostView,
  toNumbers,
} from '../../src/core/dtype.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import type { LaunchArg, Scalars, TensorDesc } from '../../src/devices/device.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import type { CudaBuffer } from '../../src/devices/cuda/memory-node.js';
import { type AttentionPath, attentionCudaPath } from '../../src/kernels/attention/cuda.js';
import { attentionDims } from '../../src/kernels/attention/params.js';
import { attentionForward } from '../../src/kernels/attention/reference.js';
import { attentionBackwardCudaPath } from '../../src/kernels/attention_backward/cuda.js';
import { attentionBackwardValues } from '../../src/kernels/attention_backward/reference.js';
import { cudaDevice, download, hostBuffer, launch, upload } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
if (!device) console.log(`# skip cuda attention: ${reason}`);

const [B, T, H, HD] = [2, 1024, 2, 64];
const C = H * HD;
const dtype: DType = 'bf16';
const scalars: Scalars = { heads: H };

interface Staged {
  readonly arg: LaunchArg;
  readonly buf: CudaBuffer;
}
const live: CudaBuffer[] = [];

/** A device tensor holding `values` rounded to dtype (or NaN when values is null); returns what it stores. */
async function stage(
  dev: CudaDevice,
  shape: number[],
  dt: DType,
  values: Float64Array | null,
): Promise<Staged> {
  const n = shape.reduce((a, b) => a * b, 1);
  const desc: TensorDesc = { shape, dtype: dt, bytes: n * bytesPerElement(dt) };
  const host = hostBuffer(desc.bytes);
  fromNumbers(dt, values ?? new Float64Array(n).fill(NaN), hostView(dt, host.sab, 0, n));
  const buf = dev.node.alloc(desc.bytes);
  live.push(buf);
  await upload(dev, host, buf, desc.bytes);
  return { arg: { buffer: buf, desc }, buf };
}

async function read(dev: CudaDevice, s: Staged): Promise<Float64Array> {
  const host = hostBuffer(s.arg.desc.bytes);
  await download(dev, s.buf, host, s.arg.desc.bytes);
  const n = s.arg.desc.shape.reduce((a, b) => a * b, 1);
  return toNumbers(s.arg.desc.dtype, hostView(s.arg.desc.dtype, host.sab, 0, n) as HostArray);
}

/** Values as the device stores them (the references must see exactly those). */
function rounded(values: Float64Array, dt: DType): Float64Array {
  const out = hostView(dt, new ArrayBuffer(values.length * bytesPerElement(dt)), 0, values.length);
  fromNumbers(dt, values, out);
  return toNumbers(dt, out);
}

/** Worst |got − want| over (atol + rtol·|want|), and the first bad index; NaN counts as bad. */
function worst(
  got: Float64Array,
  want: Float64Array,
  atol: number,
  rtol: number,
): { ratio: number; at: number } {
  let ratio = 0;
  let at = -1;
  for (let i = 0; i < want.length; i++) {
    const r = Math.abs(got[i]! - want[i]!) / (atol + rtol * Math.abs(want[i]!));
    if (!(r <= ratio)) {
      ratio = Number.isNaN(r) ? Infinity : r;
      at = i;
    }
  }
  return { ratio, at };
}

function maxAbs(x: Float64Array): number {
  return x.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
}

void describe('cuda attention, B2 H2 T1024 d64 bf16', { skip: device ? false : reason }, () => {
  const rnd = seededRandom(11);
  const qkv = rounded(
    Float64Array.from({ length: B * T * 3 * C }, () => 2 * rnd() - 1),
    dtype,
  );
  const dy = rounded(
    Float64Array.from({ length: B * T * C }, () => 2 * rnd() - 1),
    dtype,
  );
  const d = attentionDims('attention', { shape: [B, T, 3 * C], dtype, bytes: 0 }, scalars);
  const ref = attentionForward(d, qkv);
  const yStored = rounded(ref.y, dtype);
  const lseStored = rounded(ref.lse, 'f32');
  const dqkvRef = attentionBackwardValues(d, dy, qkv, yStored, lseStored);

  after(() => {
    for (const b of live.splice(0)) device!.node.free(b);
  });

  for (const path of [
    'tensor-core',
    'tensor-core-v1',
    'tensor-core-v2',
    'tensor-core-v3',
    'tensor-core-v4',
    'tensor-core-v5',
    'generic',
    'auto',
  ] as const satisfies readonly AttentionPath[]) {
    void it(`forward, ${path} path: y within bf16 rounding, lse within f32 accumulation error`, async () => {
      const dev = device!;
      const q = await stage(dev, [B, T, 3 * C], dtype, qkv);
      const y = await stage(dev, [B, T, C], dtype, null);
      const lse = await stage(dev, [B, H, T], 'f32', null);
      await launch(dev, 'attention', [q.arg, y.arg, lse.arg], scalars, attentionCudaPath(path));
      const gy = worst(await read(dev, y), ref.y, 4e-3, 1e-2);
      assert.ok(gy.ratio <= 1, `y: worst error ratio ${gy.ratio} at ${gy.at}`);
      const gl = worst(await read(dev, lse), ref.lse, 1e-4, 1e-5);
      assert.ok(gl.ratio <= 1, `lse: worst error ratio ${gl.ratio} at ${gl.at}`);
    });

    void it(`backward, ${path} path: dqkv matches the float64 gradient`, async () => {
      const dev = device!;
      const g = await stage(dev, [B, T, C], dtype, dy);
      const q = await stage(dev, [B, T, 3 * C], dtype, qkv);
      const y = await stage(dev, [B, T, C], dtype, yStored);
      const lse = await stage(dev, [B, H, T], 'f32', lseStored);
      const dq = await stage(dev, [B, T, 3 * C], dtype, null);
      const args = [g.arg, q.arg, y.arg, lse.arg, dq.arg];
      await launch(dev, 'attention_backward', args, scalars, attentionBackwardCudaPath(path));
      // P and dS are rounded to bf16 before their products on tensor cores: errors scale with the
      // largest gradient, not with each element.
      const got = await read(dev, dq);
      const r = worst(got, dqkvRef, 1e-2 * maxAbs(dqkvRef), 1e-2);
      assert.ok(
        r.ratio <= 1,
        `dqkv: worst error ratio ${r.ratio} at ${r.at} (max |dqkv| ${maxAbs(dqkvRef)})`,
      );
    });
  }
});
