/**
 * A CPU worker thread: runs batches of kernel launches on views of shared host buffers, in order,
 * and reports completions in batches (at least every millisecond) so that tiny tasks cost little.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { hostView } from '../../core/dtype.js';
import type { CpuArg, CpuKernel, CpuKernelContext } from './kernel-api.js';
import { loadOpenBlas } from './openblas.js';
import { wasmGemmStatus } from './wasm/gemm-wasm.js';
import {
  RESULT_STRIDE,
  TASK_STRIDE,
  type CustomCpuImpl,
  type FromWorker,
  type ToWorker,
  type WireExtra,
  type WorkerConfig,
} from './protocol.js';

const config = workerData as WorkerConfig;
const port = parentPort!;
const kernels = new Map<string, CpuKernel>();
// The built-in kernels come from the table the runtime names (devices never import the kernel library).
if (config.kernelTable) {
  const table = (await import(config.kernelTable)) as {
    KERNEL_IMPLS?: readonly { op: string; backend: string; impl: unknown }[];
  };
  for (const e of table.KERNEL_IMPLS ?? []) if (e.backend === 'cpu') kernels.set(e.op, e.impl as CpuKernel);
}

const ops: string[] = [];
const buffers = new Map<number, SharedArrayBuffer>();
const failed = new Set<number>();
const customs = new Map<string, CpuKernel>();

const blasLoad = config.gemmEngine === 'wasm' || config.gemmEngine === 'ts' ? null : loadOpenBlas();
const blas = blasLoad?.blas ?? null;
if (blas && config.blasThreads) blas.setThreads(config.blasThreads);
// auto: OpenBLAS when the system has it, else the WebAssembly SIMD engine, else plain TypeScript.
const engine: CpuKernelContext['gemmEngine'] =
  config.gemmEngine !== 'auto'
    ? config.gemmEngine
    : blas
      ? 'openblas'
      : wasmGemmStatus().available
        ? 'wasm'
        : 'ts';
const ctx: CpuKernelContext = {
  blas,
  lapack: blasLoad?.blas?.lapack ?? null,
  gemmEngine: engine,
  workerIndex: config.index,
};

const origin = performance.timeOrigin;
const epoch = (): number => origin + performance.now();

async function customKernel(c: CustomCpuImpl): Promise<CpuKernel> {
  const key = `${c.module}#${c.export}`;
  let k = customs.get(key);
  if (!k) {
    const mod = (await import(c.module)) as Record<string, unknown>;
    const f = mod[c.export];
    if (typeof f !== 'function') throw new Error(`${c.module} has no exported function ${c.export}`);
    k = f as CpuKernel;
    customs.set(key, k);
  }
  return k;
}

function errorOf(e: unknown): [string, string] {
  if (e && typeof e === 'object' && 'code' in e && typeof (e as { code: unknown }).code === 'string') {
    const code = (e as { code: string }).code;
    if (code.startsWith('TANDEM_ERR_')) return [code, (e as unknown as Error).message];
  }
  return ['TANDEM_ERR_KERNEL_FAILED', e instanceof Error ? `${e.name}: ${e.message}` : String(e)];
}

function numelOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function argsOf(x: WireExtra): CpuArg[] {
  return x.buffers.map((id, i) => {
    const d = x.descs[i]!;
    const sab = buffers.get(id);
    if (!sab) throw new Error(`buffer ${id} is unknown to worker ${config.index}`);
    return { data: hostView(d.dtype, sab, 0, numelOf(d.shape)), desc: d };
  });
}

const NO_ARGS: CpuArg[] = [];
const NO_SCALARS = {};

async function runBatch(count: number, tasks: Float64Array, extras: readonly WireExtra[]): Promise<void> {
  // Results go back in a transferred buffer, sized for the tasks left in this batch.
  let results = new Float64Array(count * RESULT_STRIDE);
  let r = 0;
  let errors: Array<[number, string, string]> = [];
  let lastPost = epoch();
  const n = count * TASK_STRIDE;
  for (let i = 0; i < n; i += TASK_STRIDE) {
    const id = tasks[i]!;
    const extra = tasks[i + 2]! >= 0 ? extras[tasks[i + 2]!]! : null;
    const start = epoch();
    let ok = 1;
    const pred = tasks[i + 3]!;
    if ((pred >= 0 && failed.has(pred)) || (extra && extra.after.some((p) => failed.has(p)))) {
      ok = 0;
      errors.push([id, 'TANDEM_ERR_DEPENDENCY_FAILED', 'a predecessor in this queue failed']);
    } else {
      try {
        const op = ops[tasks[i + 1]!]!;
        const kernel = extra?.custom ? await customKernel(extra.custom) : kernels.get(op);
        if (!kernel)
          throw Object.assign(new Error(`no CPU implementation of ${op}`), {
            code: 'TANDEM_ERR_UNKNOWN_KERNEL',
          });
        kernel(extra ? argsOf(extra) : NO_ARGS, extra ? extra.scalars : NO_SCALARS, ctx);
      } catch (e) {
        ok = 0;
        const [code, msg] = errorOf(e);
        errors.push([id, code, msg]);
      }
    }
    if (!ok) failed.add(id);
    const end = epoch();
    results[r++] = id;
    results[r++] = ok;
    results[r++] = start;
    results[r++] = end;
    if (end - lastPost > 1) {
      postResults(r / RESULT_STRIDE, results, errors);
      results = new Float64Array(((n - i) / TASK_STRIDE - 1) * RESULT_STRIDE);
      r = 0;
      errors = [];
      lastPost = end;
    }
  }
  if (r > 0) postResults(r / RESULT_STRIDE, results, errors);
  // Ids only matter while their followers are queued (right behind them): keep the newest.
  if (failed.size > 65536) {
    let drop = failed.size - 32768;
    for (const id of failed) {
      if (drop-- <= 0) break;
      failed.delete(id);
    }
  }
}

function post(m: FromWorker): void {
  port.postMessage(m);
}

function postResults(count: number, results: Float64Array, errors: Array<[number, string, string]>): void {
  const m: FromWorker = { t: 'done', count, results, errors };
  port.postMessage(m, [results.buffer as ArrayBuffer]);
}

let chain: Promise<void> = Promise.resolve();
port.on('message', (m: ToWorker) => {
  if (m.t === 'run') {
    for (const op of m.newOps) ops.push(op);
    for (const [id, sab] of m.bufs) buffers.set(id, sab);
    chain = chain.then(() => runBatch(m.count, m.tasks, m.extras));
  } else if (m.t === 'release') {
    for (const id of m.ids) buffers.delete(id);
  } else if (m.t === 'stop') {
    port.close();
  }
});

post({
  t: 'ready',
  engine,
  blasReason:
    (blasLoad?.reason ?? `OpenBLAS not used (engine ${config.gemmEngine})`) +
    (engine === 'ts' ? `; wasm: ${wasmGemmStatus().reason ?? 'not used'}` : ''),
});
