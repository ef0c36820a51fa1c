/**
 * NCCL through koffi on real GPUs, at the device level (the runtime-level collectives and data-parallel
 * training on the GPU are in nn-parallel.test.ts). With one GPU every collective runs with ONE rank:
 * that proves the binding loads, the communicator is made, each call is issued with the right
 * arguments (out of place, into a receive buffer poisoned with NaN), f32/f16/bf16, and the comm
 * stream's ordering after the compute stream. With two GPUs or more: every collective across all of
 * them against a float64 reference.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { DType } from '../../src/core/dtype.js';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from '../../src/core/dtype.js';
import type { CollectiveCall, CollectiveGroup, ReduceOp } from '../../src/devices/device.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import type { CudaBuffer } from '../../src/devices/cuda/memory-node.js';
import { download, hostBuffer, launch, openCuda, promise, upload } from './cuda-harness.js';

const st = await openCuda();
const gpus = st.devices as CudaDevice[];
let group: CollectiveGroup | null = null;
let reason = st.reason ?? 'no CUDA device';
if (gpus.length > 0) {
  if (!st.collectives) reason = 'the CUDA backend offers no collectives';
  else
    try {
      group = st.collectives(gpus.slice(0, 1));
      console.log(
        `# ${group.engine} loaded; one rank on ${gpus[0]!.id}; NCCL_NVLS_ENABLE=${process.env['NCCL_NVLS_ENABLE']}`,
      );
    } catch (e) {
      reason = `NCCL unavailable: ${(e as Error).message}`;
    }
}
if (group === null) console.log(`# skip nccl: ${reason}`);
after(() => group?.close());

const BYTES: Record<string, number> = { f32: 4, f64: 8, f16: 2, bf16: 2 };

function randoms(n: number, seed: number): Float64Array {
  const out = new Float64Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32) * 4 - 2 || 0.5;
  }
  return out;
}

/** Encodes into the dtype's storage and returns the values it really holds (rounded). */
function encode(dtype: DType, values: Float64Array): { raw: ArrayBufferView; held: Float64Array } {
  const held = new Float64Array(values.length);
  if (dtype === 'f32') {
    const raw = Float32Array.from(values);
    held.set(raw);
    return { raw, held };
  }
  if (dtype === 'f64') return { raw: Float64Array.from(values), held: Float64Array.from(values) };
  const raw = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    raw[i] = dtype === 'f16' ? f32ToF16(values[i]!) : f32ToBf16(values[i]!);
    held[i] = dtype === 'f16' ? f16ToF32(raw[i]!) : bf16ToF32(raw[i]!);
  }
  return { raw, held };
}

function decode(dtype: DType, bytes: Uint8Array, n: number): Float64Array {
  const buf = bytes.slice(0, n * BYTES[dtype]!).buffer;
  if (dtype === 'f32') return Float64Array.from(new Float32Array(buf));
  if (dtype === 'f64') return new Float64Array(buf);
  const words = new Uint16Array(buf);
  return Float64Array.from(words, (w) => (dtype === 'f16' ? f16ToF32(w) : bf16ToF32(w)));
}

async function toDevice(
  d: CudaDevice,
  dtype: DType,
  values: Float64Array | null,
  n: number,
): Promise<CudaBuffer> {
  const bytes = n * BYTES[dtype]!;
  const h = hostBuffer(bytes);
  if (values === null)
    new Uint8Array(h.sab).fill(0xff); // NaN in every float dtype
  else {
    const { raw } = encode(dtype, values);
    new Uint8Array(h.sab, 0, bytes).set(new Uint8Array(raw.buffer, raw.byteOffset, bytes));
  }
  const b = d.node.alloc(bytes);
  await upload(d, h, b, bytes);
  return b;
}

async function fromDevice(d: CudaDevice, dtype: DType, b: CudaBuffer, n: number): Promise<Float64Array> {
  const h = hostBuffer(n * BYTES[dtype]!);
  await download(d, b, h, n * BYTES[dtype]!);
  return decode(dtype, new Uint8Array(h.sab), n);
}

function close(got: Float64Array, want: Float64Array, tol: number, what: string): void {
  assert.equal(got.length, want.length, what);
  for (let i = 0; i < want.length; i++) {
    const ok = Math.abs(got[i]! - want[i]!) <= tol * (1 + Math.abs(want[i]!));
    if (!ok) assert.fail(`${what}: element ${i} is ${got[i]}, want ${want[i]} (tol ${tol})`);
  }
}

/** Runs one collective over `g`'s ranks with random inputs; checks every rank against float64. */
async function check(
  g: CollectiveGroup,
  op: CollectiveCall['op'],
  dtype: DType,
  reduce: ReduceOp,
  count: number,
): Promise<void> {
  const ranks = g.devices as CudaDevice[];
  const n = ranks.length;
  const inCount = op === 'reduceScatter' ? n * count : count;
  const outCount = op === 'allGather' ? n * count : count;
  const inputs = ranks.map((_, r) => encode(dtype, randoms(inCount, 17 + r * 31)).held);
  const send = await Promise.all(ranks.map((d, r) => toDevice(d, dtype, inputs[r]!, inCount)));
  const recv = await Promise.all(ranks.map((d) => toDevice(d, dtype, null, outCount)));
  try {
    await promise((done) => g.run([{ op, reduce, root: n - 1, dtype, count, send, recv }], done));
    const sum = new Float64Array(inCount);
    for (const x of inputs) for (let i = 0; i < inCount; i++) sum[i]! += x[i]!;
    if (reduce === 'avg') for (let i = 0; i < inCount; i++) sum[i]! /= n;
    const tol = dtype === 'f32' ? 1e-6 : dtype === 'f64' ? 1e-14 : dtype === 'f16' ? 2e-3 : 1.6e-2;
    for (let r = 0; r < n; r++) {
      let want: Float64Array;
      if (op === 'allReduce') want = sum;
      else if (op === 'reduceScatter') want = sum.slice(r * count, (r + 1) * count);
      else if (op === 'allGather') {
        want = new Float64Array(outCount);
        inputs.forEach((x, j) => want.set(x, j * count));
      } else want = inputs[n - 1]!;
      const got = await fromDevice(ranks[r]!, dtype, recv[r]!, outCount);
      close(got, want, n === 1 ? 0 : tol, `${op} ${reduce} ${dtype} rank ${r}/${n}`);
    }
  } finally {
    ranks.forEach((d, r) => {
      d.node.free(send[r]!);
      d.node.free(recv[r]!);
    });
  }
}

void describe('NCCL with one rank', { skip: group === null ? reason : false }, () => {
  const g = group!;
  void it('allReduce (sum, avg), reduceScatter, allGather, broadcast: f32, f16, bf16, f64 into poisoned outputs', async () => {
    for (const dtype of ['f32', 'f16', 'bf16', 'f64'] as const) {
      for (const reduce of ['sum', 'avg'] as const) await check(g, 'allReduce', dtype, reduce, 1000 + 3);
      await check(g, 'reduceScatter', dtype, 'sum', 4096);
      await check(g, 'allGather', dtype, 'sum', 777);
      await check(g, 'broadcast', dtype, 'sum', 513);
    }
  });

  void it('the comm stream waits for kernels already queued on the compute stream (event, no host sync)', async () => {
    const d = gpus[0]!;
    const n = 1 << 22;
    const desc = { shape: [n], dtype: 'f32' as const, bytes: n * 4 };
    const busyN = 1 << 26;
    const big = d.node.alloc(busyN * 4);
    const values = randoms(n, 5);
    const x = await toDevice(d, 'f32', values, n);
    const y = await toDevice(d, 'f32', null, n);
    try {
      // 40 passes over 256 MB keep the compute stream busy for milliseconds; then x = -x, and at once
      // the collective copies x into y. Without the event wait it would copy x before the negation.
      const pending: Promise<void>[] = [];
      const bigDesc = { shape: [busyN], dtype: 'f32' as const, bytes: busyN * 4 };
      pending.push(launch(d, 'fill', [{ buffer: big, desc: bigDesc }], { value: 1 }));
      for (let i = 0; i < 40; i++)
        pending.push(launch(d, 'scale', [{ buffer: big, desc: bigDesc }], { alpha: 1 }));
      pending.push(launch(d, 'scale', [{ buffer: x, desc }], { alpha: -1 }));
      await promise((done) =>
        group!.run(
          [{ op: 'allReduce', reduce: 'sum', root: 0, dtype: 'f32', count: n, send: [x], recv: [y] }],
          done,
        ),
      );
      // A kernel after the collective reads y (y *= 2), ordered by waiting for the collective's done.
      await launch(d, 'scale', [{ buffer: y, desc }], { alpha: 2 });
      await Promise.all(pending);
      const got = await fromDevice(d, 'f32', y, n);
      const want = Float64Array.from(Float32Array.from(values), (v) => -2 * v);
      close(got, want, 0, 'y = 2 * allReduce(-x)');
    } finally {
      d.node.free(big);
      d.node.free(x);
      d.node.free(y);
    }
  });

  void it('refuses a dtype NCCL lacks and buffers of the wrong device with TandemErrors', async () => {
    const d = gpus[0]!;
    const b = d.node.alloc(64);
    try {
      await assert.rejects(
        promise((done) =>
          group!.run(
            [{ op: 'allReduce', reduce: 'sum', root: 0, dtype: 'u8', count: 64, send: [b], recv: [b] }],
            done,
          ),
        ),
        (e: Error & { code?: string }) => e.code === 'TANDEM_ERR_DTYPE',
      );
      await assert.rejects(
        promise((done) =>
          group!.run(
            [{ op: 'allReduce', reduce: 'sum', root: 0, dtype: 'f32', count: 16, send: [b, b], recv: [b] }],
            done,
          ),
        ),
        (e: Error & { code?: string }) => e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
      );
    } finally {
      d.node.free(b);
    }
  });
});

const multi = gpus.length >= 2 && st.collectives ? false : `needs 2 GPUs with NCCL, found ${gpus.length}`;
void describe('NCCL across GPUs', { skip: group === null ? reason : multi }, () => {
  void it('every collective over all GPUs against float64 (f32, bf16)', async () => {
    const g = st.collectives!(gpus);
    try {
      for (const dtype of ['f32', 'bf16'] as const) {
        await check(g, 'allReduce', dtype, 'sum', 100_003);
        await check(g, 'allReduce', dtype, 'avg', 4099);
        await check(g, 'reduceScatter', dtype, 'avg', 8192);
        await check(g, 'allGather', dtype, 'sum', 5000);
        await check(g, 'broadcast', dtype, 'sum', 3333);
      }
    } finally {
      g.close();
    }
  });
});
