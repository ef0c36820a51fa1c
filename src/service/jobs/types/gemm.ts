/**
 * `gemm`: C = A·B on random n×n inputs, split into row panels (one task each) so that the runtime can
 * spread them over devices, progress is meaningful and a cancel takes effect between panels. Sampled
 * rows of C are checked against a float64 reference of the same (rounded) inputs.
 */
import {
  bytesPerElement,
  epsilon,
  fromNumbers,
  hostView,
  toNumbers,
  type DType,
  type HostArray,
} from '../../../core/dtype.js';
import { TandemError } from '../../../core/errors.js';
import type { Tensor } from '../../../runtime/runtime.js';
import { defineJobType, type JobContext, type ServiceRuntime } from '../job-type.js';
import { awaitOrAbort, requireRuntime } from './task-helpers.js';

export const GEMM_MAX_N = 8192;
const GEMM_DTYPES = ['f32', 'f64', 'f16', 'bf16'] as const;

export interface GemmParams {
  readonly n: number;
  readonly dtype: DType;
  readonly device: string | undefined;
  readonly panels: number;
  readonly seed: number;
  readonly checkRows: number;
}

/** Lets the event loop answer requests between slices of host-side work (health stays fast). */
const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));
const SLICE = 1 << 16;

async function randomHost(dtype: DType, count: number, seed: number): Promise<HostArray> {
  const out = hostView(dtype, new ArrayBuffer(count * bytesPerElement(dtype)), 0, count);
  const vals = new Float64Array(Math.min(SLICE, count));
  let s = seed >>> 0 || 1;
  for (let base = 0; base < count; base += SLICE) {
    const len = Math.min(SLICE, count - base);
    for (let i = 0; i < len; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      vals[i] = ((s >>> 0) / 2 ** 32) * 2 - 1 || 0.5; // never exactly zero: a zero input hides bugs
    }
    fromNumbers(dtype, vals.subarray(0, len), out.subarray(base, base + len));
    await yieldToLoop();
  }
  return out;
}

/** f32/f64 are read as they are; 16-bit types are widened slice by slice. */
async function readable(dtype: DType, data: HostArray): Promise<ArrayLike<number>> {
  if (data instanceof Float32Array || data instanceof Float64Array) return data;
  const out = new Float64Array(data.length);
  for (let base = 0; base < data.length; base += SLICE) {
    out.set(toNumbers(dtype, data.subarray(base, Math.min(data.length, base + SLICE))), base);
    await yieldToLoop();
  }
  return out;
}

/** Max relative error (scaled by the row's largest reference value) of sampled rows of C. */
export async function checkRows(
  dtype: DType,
  n: number,
  a: HostArray,
  b: HostArray,
  rows: Map<number, Float64Array>,
) {
  const B = await readable(dtype, b);
  const ref = new Float64Array(n);
  let maxRel = 0;
  // Yield every few k-steps: one row of the reference is n² multiply-adds.
  const qStep = Math.max(1, Math.floor(SLICE / n));
  for (const [i, got] of rows) {
    const Ai = toNumbers(dtype, a.subarray(i * n, (i + 1) * n));
    ref.fill(0);
    for (let q0 = 0; q0 < n; q0 += qStep) {
      for (let q = q0; q < Math.min(n, q0 + qStep); q++) {
        const aiq = Ai[q]!;
        const off = q * n;
        for (let j = 0; j < n; j++) ref[j] += aiq * B[off + j]!;
      }
      await yieldToLoop();
    }
    let scale = 1e-30;
    for (let j = 0; j < n; j++) scale = Math.max(scale, Math.abs(ref[j]!));
    for (let j = 0; j < n; j++) {
      const err = Math.abs(got[j]! - ref[j]!) / scale;
      maxRel = Number.isNaN(err) ? Infinity : Math.max(maxRel, err);
    }
  }
  const accEps = dtype === 'f64' ? epsilon('f64') : epsilon('f32');
  // Output rounding plus ~sqrt(k) ulps of accumulation. The job asks for plain f32 (never tf32), so no
  // backend may round the inputs to 10-bit mantissas: a tf32-sized error would be a real failure here.
  const tolerance = 4 * epsilon(dtype) + 8 * Math.sqrt(n) * accEps;
  return { maxRelError: maxRel, tolerance, rowsChecked: rows.size, ok: maxRel <= tolerance };
}

async function runGemm(ctx: JobContext<GemmParams>) {
  const rt: ServiceRuntime = requireRuntime(ctx);
  const { n, dtype, panels, seed } = ctx.params;
  const a = await randomHost(dtype, n * n, seed);
  const b = await randomHost(dtype, n * n, seed + 1);
  const rowsPer = Math.ceil(n / panels);
  const tensors: Tensor[] = [];
  const bT = rt.tensor([n, n], dtype, b);
  tensors.push(bT);
  const pieces: {
    row0: number;
    rows: number;
    c: Tensor;
    done: Promise<void>;
    device: () => string | null;
  }[] = [];
  const t0 = performance.now();
  let finished = 0;
  try {
    for (let row0 = 0; row0 < n; row0 += rowsPer) {
      if (ctx.signal.aborted) break;
      const rows = Math.min(rowsPer, n - row0);
      const aT = rt.tensor([rows, n], dtype, a.subarray(row0 * n, (row0 + rows) * n));
      const cT = rt.tensor([rows, n], dtype);
      tensors.push(aT, cT);
      await yieldToLoop(); // each host copy into a tensor blocks for a while: let requests through
      const task = rt.submit({
        kernel: 'gemm',
        args: { a: aT, b: bT, c: cT },
        scalars: { alpha: 1, beta: 0, transA: false, transB: false },
        ...(ctx.placement.device ? { device: ctx.placement.device } : {}),
        name: `gemm rows ${row0}-${row0 + rows - 1}`,
        tags: ctx.tags,
      });
      const done = task.done.then(() =>
        ctx.progress((++finished / panels) * 0.9, `panel ${finished}/${panels}`),
      );
      pieces.push({ row0, rows, c: cT, done, device: () => task.deviceId });
    }
    await awaitOrAbort(
      Promise.all(pieces.map((p) => p.done)),
      ctx.signal,
      Promise.allSettled(pieces.map((p) => p.done)),
    );
    const seconds = (performance.now() - t0) / 1000;
    // Sample rows: first, last and a spread in between.
    const wanted = new Set<number>([0, n - 1]);
    for (let i = 1; wanted.size < Math.min(ctx.params.checkRows, n); i++) wanted.add((i * 2654435761) % n);
    const sampled = new Map<number, Float64Array>();
    const readStart = Date.now() * 1000;
    for (const p of pieces) {
      const inPanel = [...wanted].filter((r) => r >= p.row0 && r < p.row0 + p.rows);
      if (inPanel.length === 0) continue;
      const c = await rt.read(p.c);
      for (const r of inPanel)
        sampled.set(r, toNumbers(dtype, c.subarray((r - p.row0) * n, (r - p.row0 + 1) * n)));
      // rt.read may settle without a macrotask in between: yield so that reads do not chain into one block.
      await yieldToLoop();
    }
    const checkStart = Date.now() * 1000;
    ctx.span('read sampled rows', readStart, checkStart, { rows: sampled.size });
    const check = await checkRows(dtype, n, a, b, sampled);
    ctx.span('reference check (float64)', checkStart, Date.now() * 1000, { rows: check.rowsChecked });
    ctx.progress(1, 'checked');
    const devices = [...new Set(pieces.map((p) => p.device()).filter((d): d is string => d !== null))];
    if (!check.ok)
      throw new TandemError('TANDEM_ERR_KERNEL_FAILED', 'gemm result differs from the float64 reference', {
        ...check,
      });
    return { n, dtype, panels: pieces.length, devices, seconds, gflops: (2 * n ** 3) / seconds / 1e9, check };
  } finally {
    for (const t of tensors) rt.free(t);
  }
}

export const gemmJob = defineJobType<GemmParams>({
  name: 'gemm',
  description: 'C = A·B on random n×n matrices, split into row panels; sampled rows checked against float64.',
  paramsSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['n'],
    properties: {
      n: { type: 'integer', minimum: 1, maximum: GEMM_MAX_N },
      dtype: { type: 'string', enum: [...GEMM_DTYPES], default: 'f32' },
      device: { type: 'string', pattern: '^[a-z]+[0-9]*$', maxLength: 32 },
      panels: { type: 'integer', minimum: 1, maximum: 64 },
      seed: { type: 'integer', minimum: 0, maximum: 2 ** 31 - 1, default: 1 },
      checkRows: { type: 'integer', minimum: 1, maximum: 64, default: 8 },
    },
  },
  parse(raw) {
    const n = Number(raw['n']);
    const dtype = (raw['dtype'] ?? 'f32') as DType;
    const panels = raw['panels'] === undefined ? (n >= 512 ? 4 : 1) : Number(raw['panels']);
    if (panels > n) throw new TandemError('TANDEM_ERR_SIZE', `panels (${panels}) must be at most n (${n})`);
    return {
      n,
      dtype,
      device: typeof raw['device'] === 'string' ? raw['device'] : undefined,
      panels,
      seed: Number(raw['seed'] ?? 1),
      checkRows: Number(raw['checkRows'] ?? 8),
    };
  },
  memoryBytes: (p) => 3 * p.n * p.n * bytesPerElement(p.dtype),
  jobClass: (p) => (p.n >= 2048 ? 'throughput' : 'latency'),
  requestedDevice: (p) => p.device,
  run: runGemm,
});
