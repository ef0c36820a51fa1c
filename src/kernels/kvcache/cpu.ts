/**
 * CPU versions of the KV-cache ops. kv_append and gather_rows copy storage words (same dtype on both
 * sides, so 16-bit values move without a decode); kv_attention and embedding_at decode one row at a time
 * (a whole cache is never decoded: it may hold thousands of positions) and compute in f32 (f64 for f64),
 * rounding once on store.
 */
import type { CpuArg, CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, decodeHalf, encodeHalf, isHalf } from '../common/cpu-float.js';
import { kvHeads } from './params.js';

/** Storage words of any float tensor; source and destination always share the dtype here. */
type Words = Float32Array;

function words(a: CpuArg): Words {
  return a.data as unknown as Words;
}

function scratch(a: CpuArg, n: number): FloatArray {
  return a.desc.dtype === 'f64' ? new Float64Array(n) : new Float32Array(n);
}

/** Decodes `dst.length` elements of `a` from element `start` into dst. */
function readInto(a: CpuArg, start: number, dst: FloatArray): void {
  if (isHalf(a.desc.dtype))
    decodeHalf(
      a.desc.dtype,
      (a.data as Uint16Array).subarray(start, start + dst.length),
      dst as Float32Array,
    );
  else dst.set((a.data as FloatArray).subarray(start, start + dst.length));
}

/** Stores src into `a` from element `start`, rounding to a's dtype. */
function writeFrom(a: CpuArg, start: number, src: FloatArray): void {
  if (isHalf(a.desc.dtype))
    encodeHalf(
      a.desc.dtype,
      src as Float32Array,
      (a.data as Uint16Array).subarray(start, start + src.length),
    );
  else (a.data as FloatArray).set(src, start);
}

function nanRow(a: CpuArg, start: number, n: number): void {
  writeFrom(a, start, scratch(a, n).fill(NaN));
}

export const kvAppendCpu: CpuKernel = (args) => {
  const [qkv, slotA, posA, kc, vc] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const [S, P, C] = kc.desc.shape as [number, number, number];
  const slot = slotA.data as Int32Array;
  const pos = posA.data as Int32Array;
  const src = words(qkv);
  for (let m = 0; m < slot.length; m++) {
    const s = slot[m]!;
    const p = pos[m]!;
    if (s < 0 || s >= S || p < 0 || p >= P) continue;
    const dst = (s * P + p) * C;
    const row = m * 3 * C;
    words(kc).set(src.subarray(row + C, row + 2 * C), dst);
    words(vc).set(src.subarray(row + 2 * C, row + 3 * C), dst);
  }
};

export const kvAttentionCpu: CpuKernel = (args, scalars) => {
  const [qkv, slotA, posA, kc, vc, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const [S, P, C] = kc.desc.shape as [number, number, number];
  const { heads, headDim: D, scale } = kvHeads('kv_attention', C, scalars);
  const slot = slotA.data as Int32Array;
  const pos = posA.data as Int32Array;
  const q = scratch(qkv, C);
  const key = scratch(qkv, C);
  const out = scratch(qkv, C);
  const score = new Float64Array(heads * P);
  for (let m = 0; m < slot.length; m++) {
    const sl = slot[m]!;
    const last = pos[m]!;
    if (sl < 0 || sl >= S || last < 0 || last >= P) {
      nanRow(y, m * C, C);
      continue;
    }
    readInto(qkv, m * 3 * C, q);
    // Scores for every head from one decoded key row, then the weighted sum of value rows.
    const max = new Float64Array(heads).fill(-Infinity);
    for (let s = 0; s <= last; s++) {
      readInto(kc, (sl * P + s) * C, key);
      for (let h = 0; h < heads; h++) {
        let dot = 0;
        for (let c = h * D; c < (h + 1) * D; c++) dot += q[c]! * key[c]!;
        const v = scale * dot;
        score[h * P + s] = v;
        if (v > max[h]!) max[h] = v;
      }
    }
    const sum = new Float64Array(heads);
    for (let h = 0; h < heads; h++)
      for (let s = 0; s <= last; s++) sum[h]! += score[h * P + s] = Math.exp(score[h * P + s]! - max[h]!);
    const acc = new Float64Array(C);
    for (let s = 0; s <= last; s++) {
      readInto(vc, (sl * P + s) * C, key);
      for (let h = 0; h < heads; h++) {
        const w = score[h * P + s]!;
        for (let c = h * D; c < (h + 1) * D; c++) acc[c]! += w * key[c]!;
      }
    }
    for (let c = 0; c < C; c++) out[c] = acc[c]! / sum[Math.floor(c / D)]!;
    writeFrom(y, m * C, out);
  }
};

export const embeddingAtCpu: CpuKernel = (args) => {
  const [idsA, posA, wte, wpe, y] = args as [CpuArg, CpuArg, CpuArg, CpuArg, CpuArg];
  const [V, C] = wte.desc.shape as [number, number];
  const P = wpe.desc.shape[0]!;
  const ids = idsA.data as Int32Array;
  const pos = posA.data as Int32Array;
  const a = scratch(wte, C);
  const b = scratch(wte, C);
  for (let m = 0; m < ids.length; m++) {
    const id = ids[m]!;
    const p = pos[m]!;
    if (id < 0 || id >= V || p < 0 || p >= P) {
      nanRow(y, m * C, C);
      continue;
    }
    readInto(wte, id * C, a);
    readInto(wpe, p * C, b);
    for (let c = 0; c < C; c++) a[c]! += b[c]!;
    writeFrom(y, m * C, a);
  }
};

export const gatherRowsCpu: CpuKernel = (args) => {
  const [x, indexA, y] = args as [CpuArg, CpuArg, CpuArg];
  const [M, C] = x.desc.shape as [number, number];
  const index = indexA.data as Int32Array;
  for (let r = 0; r < index.length; r++) {
    const i = index[r]!;
    if (i < 0 || i >= M) nanRow(y, r * C, C);
    else words(y).set(words(x).subarray(i * C, (i + 1) * C), r * C);
  }
};
