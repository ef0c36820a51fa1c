/**
 * `gemm`: C = A·B on random n×n inputs, split into row panels (one task each) so that the runtime can
 * spread them over devices, progress is meaningful and a cancel takes effect between panels. Sampled
 * rows of C are checked against a float64 reference of the same (rounded) inputs.
 */
import { bytesPerElement, hostView, toNumbers, type DType, type HostArray } from '../../../core/dtype.js';
import { TandemError } from '../../../core/errors.js';
import type { DeviceCaps } from '../../../devices/device.js';
import type { KernelDef } from '../../../kernels/kernel.js';
import type { Tensor } from '../../../runtime/runtime.js';
import { defineJobType, type JobContext, type ServiceRuntime } from '../job-type.js';
import { accumulateReference, compareRows, fillUniform, regenerateRow, streamKey } from './gemm-data.js';
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

const CPU_MODULE = new URL('./gemm-cpu.js', import.meta.url).href;
const FILL = 'gemm_job.fill';
const CHECK = 'gemm_job.check';

const fillDef: KernelDef = {
  name: FILL,
  args: [{ name: 'x', mode: 'w' }],
  validate: () => undefined,
  cost: (args) => ({ flops: 0, bytes: args['x']!.bytes }),
};

const checkDef: KernelDef = {
  name: CHECK,
  args: [
    { name: 'c', mode: 'r' },
    { name: 'b', mode: 'r' },
    { name: 'out', mode: 'w' },
  ],
  validate(args) {
    if (args['out']!.dtype !== 'f64' || args['c']!.dtype !== args['b']!.dtype)
      throw new TandemError('TANDEM_ERR_DTYPE', `${CHECK}: out must be f64 and c, b of one dtype`);
  },
  cost: (args) => {
    const [k, n] = args['b']!.shape as [number, number];
    return { flops: args['out']!.shape[0]! * k * n, bytes: args['b']!.bytes };
  },
};

const withWorkerKernels = new WeakSet<object>();

/**
 * True when a CPU device can run the job's own worker kernels (generate the inputs, compute the
 * reference): then the service's event loop never holds or copies the matrices. Registered once per runtime.
 */
function useWorkerKernels(rt: ServiceRuntime): boolean {
  if (withWorkerKernels.has(rt)) return true;
  const caps = (d: ServiceRuntime['devices'][number]): DeviceCaps | undefined => d.caps;
  if (!rt.devices.some((d) => d.info.kind === 'cpu' && caps(d)?.customSource?.includes('cpu-module')))
    return false;
  rt.registerKernel(fillDef, { cpu: { module: CPU_MODULE, export: 'gemmJobFill' } });
  rt.registerKernel(checkDef, { cpu: { module: CPU_MODULE, export: 'gemmJobCheck' } });
  withWorkerKernels.add(rt);
  return true;
}

/** Host fallback: the same stream as the worker kernel, generated slice by slice between requests. */
async function uniformHost(dtype: DType, count: number, key: number): Promise<HostArray> {
  const out = hostView(dtype, new ArrayBuffer(count * bytesPerElement(dtype)), 0, count);
  for (let base = 0; base < count; base += SLICE) {
    fillUniform(dtype, out.subarray(base, Math.min(count, base + SLICE)), key, base);
    await yieldToLoop();
  }
  return out;
}

/** Host fallback of the check: reference rows from A's regenerated rows and B on the host, in slices. */
async function referenceOnHost(dtype: DType, n: number, keyA: number, b: HostArray, rows: number[]) {
  const aRows = rows.map((r) => regenerateRow(dtype, n, keyA, r));
  const refs = rows.map(() => new Float64Array(n));
  const qStep = Math.max(1, Math.floor(SLICE / n / Math.max(1, rows.length)));
  for (let q = 0; q < n; q += qStep) {
    accumulateReference(dtype, n, aRows, b, refs, q, Math.min(n, q + qStep));
    await yieldToLoop();
  }
  return refs;
}

interface Piece {
  row0: number;
  rows: number;
  c: Tensor;
  done: Promise<void>;
  device: () => string | null;
}

async function runGemm(ctx: JobContext<GemmParams>) {
  const rt: ServiceRuntime = requireRuntime(ctx);
  const { n, dtype, panels, seed } = ctx.params;
  const keyA = streamKey(seed, 0);
  const keyB = streamKey(seed, 1);
  const onWorker = useWorkerKernels(rt);
  const fill = (x: Tensor, key: number, first: number, name: string) =>
    rt.submit({ kernel: FILL, args: { x }, scalars: { key, first }, device: 'cpu', name, tags: ctx.tags });
  const b = onWorker ? null : await uniformHost(dtype, n * n, keyB);
  const a = onWorker ? null : await uniformHost(dtype, n * n, keyA);
  const rowsPer = Math.ceil(n / panels);
  const tensors: Tensor[] = [];
  const bT = rt.tensor([n, n], dtype, b ?? undefined);
  tensors.push(bT);
  if (!b) fill(bT, keyB, 0, 'gemm input B');
  const pieces: Piece[] = [];
  const t0 = performance.now();
  let finished = 0;
  try {
    for (let row0 = 0; row0 < n; row0 += rowsPer) {
      if (ctx.signal.aborted) break;
      const rows = Math.min(rowsPer, n - row0);
      const aT = rt.tensor([rows, n], dtype, a?.subarray(row0 * n, (row0 + rows) * n));
      const cT = rt.tensor([rows, n], dtype);
      tensors.push(aT, cT);
      if (a)
        await yieldToLoop(); // each host copy into a tensor blocks for a while: let requests through
      else fill(aT, keyA, row0 * n, `gemm input A rows ${row0}-${row0 + rows - 1}`);
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
    const checkStart = Date.now() * 1000;
    const got: ArrayLike<number>[] = [];
    const refs: ArrayLike<number>[] = [];
    if (onWorker) {
      // One check task per panel with sampled rows; only the rows and their references come back.
      const outs: { out: Tensor; k: number }[] = [];
      for (const p of pieces) {
        const inPanel = [...wanted].filter((r) => r >= p.row0 && r < p.row0 + p.rows).map((r) => r - p.row0);
        if (inPanel.length === 0) continue;
        const out = rt.tensor([2 * inPanel.length, n], 'f64');
        tensors.push(out);
        rt.submit({
          kernel: CHECK,
          args: { c: p.c, b: bT, out },
          scalars: { key: keyA, row0: p.row0, rows: inPanel.join(',') },
          device: 'cpu',
          name: `gemm check rows of ${p.row0}-${p.row0 + p.rows - 1}`,
          tags: ctx.tags,
        });
        outs.push({ out, k: inPanel.length });
      }
      for (const { out, k } of outs) {
        const data = (await rt.read(out)) as Float64Array;
        for (let i = 0; i < k; i++) {
          got.push(data.subarray(i * n, (i + 1) * n));
          refs.push(data.subarray((k + i) * n, (k + i + 1) * n));
        }
      }
    } else {
      const rows: number[] = [];
      for (const p of pieces) {
        const inPanel = [...wanted].filter((r) => r >= p.row0 && r < p.row0 + p.rows);
        if (inPanel.length === 0) continue;
        const c = await rt.read(p.c);
        for (const r of inPanel) {
          rows.push(r);
          got.push(toNumbers(dtype, c.subarray((r - p.row0) * n, (r - p.row0 + 1) * n)));
        }
        // rt.read may settle without a macrotask in between: yield so that reads do not chain into one block.
        await yieldToLoop();
      }
      refs.push(...(await referenceOnHost(dtype, n, keyA, b!, rows)));
    }
    const check = compareRows(dtype, n, got, refs);
    ctx.span('reference check (float64)', checkStart, Date.now() * 1000, {
      rows: check.rowsChecked,
      where: onWorker ? 'cpu worker' : 'host',
    });
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
  // n = 8192 on a 2-core CPU takes about a minute; a GPU, well under a second.
  defaultTimeoutSeconds: 300,
  requestedDevice: (p) => p.device,
  run: runGemm,
});
