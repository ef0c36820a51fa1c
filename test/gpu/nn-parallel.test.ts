/**
 * Collectives and data parallelism through the runtime on a GPU. With one GPU: the NCCL engine with ONE
 * rank on cuda0 (a placed task on the comm stream, ordered between kernels by the tensors it touches,
 * in traces on cuda0.comm); data parallel and ZeRO-1 with one NCCL rank equal the plain Trainer; two
 * replicas on cuda0 through the portable collectives equal one replica on the whole batch. With two
 * GPUs or more: the same training across cuda0 and cuda1 with NCCL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Replicas } from '../../src/nn/parallel/index.js';
import type { TrainData, TrainSpec } from '../../src/nn/train.js';
import type { TaskEvent } from '../../src/obs/observer.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { parallelRun, singleRun, type Run } from '../nn/parallel-runs.js';

Object.assign(process.env, { NCCL_NVLS_ENABLE: '0' });
const rt = await Runtime.create({
  backends: ['cuda'],
  calibrate: false,
  cacheDir: process.env['TANDEM_CACHE_DIR'] ?? mkdtempSync(join(tmpdir(), 'tandem-dp-')),
  log: () => undefined,
});
const gpus = rt.devices.filter((d) => d.info.kind === 'cuda').map((d) => d.info.id);
let reason = rt.backends.find((b) => b.kind === 'cuda')?.reason ?? 'no CUDA device';
let ncclEngine: string | null = null;
if (gpus.length > 0) {
  try {
    const c = rt.collectives(['cuda0'], { engine: 'nccl' });
    ncclEngine = c.engine;
    c.close();
    console.log(`# ${ncclEngine} on ${gpus.join(', ')}`);
  } catch (e) {
    reason = `NCCL unavailable: ${(e as Error).message}`;
  }
}
if (ncclEngine === null) console.log(`# skip: ${reason}`);
const skip = ncclEngine === null ? reason : false;
const noGpu = gpus.length === 0 ? reason : false;

after(async () => {
  await rt.close();
});

function randoms(n: number, seed: number): Float64Array {
  const out = new Float64Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 2 ** 32) * 2 - 1 || 0.25;
  }
  return out;
}

const tokens = (n: number, seed: number): TrainData => ({
  kind: 'tokens',
  train: Int32Array.from(randoms(n, seed), (v) => Math.floor(((v + 1) / 2) * 255.999)),
});

const gpt: TrainSpec = {
  model: 'gpt',
  preset: 'gpt-micro',
  steps: 3,
  batch: 8,
  seqLen: 32,
  precision: 'f32',
  lr: 3e-3,
  seed: 4,
};

const single = (spec: TrainSpec, data: TrainData): Promise<Run> => singleRun(rt, spec, data, 'cuda0');
const parallel = (
  spec: TrainSpec,
  data: TrainData,
  ranks: string[],
  mode: 'data' | 'zero1',
  engine: 'nccl' | 'portable',
): Promise<Run & { replicas: Replicas }> =>
  parallelRun(rt, spec, data, ranks, mode, { engine, bucketBytes: 16 * 1024 });

function maxRel(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let w = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / (1 + Math.abs(b[i]!));
    if (!(d <= w)) w = Number.isNaN(d) ? Infinity : d;
  }
  return w;
}

/**
 * Losses within `lossTol`; parameters: at most `fraction` of the elements off by more than 1e-4
 * (relative), none by more than two AdamW steps of lr per step — an element whose gradient is near zero
 * may take the other sign when summation order differs (atomics, another GEMM tiling), and AdamW's
 * early steps move it by about ±lr whatever the size.
 */
function compare(
  got: { losses: number[]; params: Float64Array[] },
  want: { losses: number[]; params: Float64Array[] },
  lossTol: number,
  fraction: number,
  what: string,
): void {
  const l = maxRel(got.losses, want.losses);
  let worst = 0;
  let off = 0;
  let total = 0;
  got.params.forEach((x, i) => {
    const w = want.params[i]!;
    for (let k = 0; k < x.length; k++) {
      const d = Math.abs(x[k]! - w[k]!);
      if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
      if (!(d / (1 + Math.abs(w[k]!)) <= 1e-4)) off++;
    }
    total += x.length;
  });
  console.log(
    `# ${what}: losses ${got.losses.map((x) => x.toFixed(6)).join(' ')}; max rel diff loss ${l.toExponential(2)}; parameters: max abs diff ${worst.toExponential(2)}, ${off} of ${total} off by > 1e-4`,
  );
  assert.ok(l <= lossTol, `${what}: losses differ by ${l}`);
  assert.ok(off <= fraction * total, `${what}: ${off} of ${total} parameters differ`);
  assert.ok(worst <= 2 * gpt.lr! * gpt.steps, `${what}: a parameter differs by ${worst}`);
}

void describe('runtime collectives with NCCL (one rank on cuda0)', { skip }, () => {
  void it('a placed task on cuda0.comm ordered between kernels by its tensors; buckets in one task', async () => {
    const events: TaskEvent[] = [];
    const observer = { onTaskEnd: (e: TaskEvent) => void events.push(e) };
    rt.addObserver(observer);
    try {
      const comm = rt.collectives(['cuda0'], { engine: 'nccl' });
      const n = 1 << 20;
      const v = randoms(n, 3);
      const x = rt.tensor([n], 'f32', v);
      const y = rt.tensor([1000], 'f32', randoms(1000, 4));
      rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 3 }, device: 'cuda0' });
      comm.allReduceMany([[x, y]], 'avg');
      rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 0.5 }, device: 'cuda0' });
      const got = Float64Array.from((await rt.read(x)) as Float32Array);
      const want = Float64Array.from(Float32Array.from(v), (a) => Math.fround(Math.fround(3 * a) * 0.5));
      assert.equal(maxRel(got, want), 0, 'x = 0.5 · allReduce(3 · x)');
      const outs = rt.tensor([n], 'f32', new Float64Array(n).fill(NaN));
      await comm.allGather([x], [outs]).done;
      assert.equal(maxRel(Float64Array.from((await rt.read(outs)) as Float32Array), want), 0, 'allGather');
      await comm.broadcast([y], 0).done;
      await comm.reduceScatter([outs], [x], 'sum').done;
      comm.close();
      const e = events.find((ev) => ev.name.startsWith('allReduce.avg'));
      assert.equal(e?.queueId, 'cuda0.comm');
    } finally {
      rt.removeObserver(observer);
    }
  });
});

void describe('data parallel on one GPU', { skip: noGpu }, () => {
  void it(
    'one NCCL rank: data parallel and ZeRO-1 equal the plain Trainer',
    { timeout: 120_000, skip },
    async () => {
      const data = tokens(20_000, 5);
      const ref = await single(gpt, data);
      const dp = await parallel(gpt, data, ['cuda0'], 'data', 'nccl');
      compare(dp, ref, 1e-5, 1e-3, 'data parallel, 1 NCCL rank vs Trainer');
      dp.replicas.dispose();
      const z = await parallel(gpt, data, ['cuda0'], 'zero1', 'nccl');
      compare(z, ref, 1e-5, 1e-3, 'ZeRO-1, 1 NCCL rank vs Trainer');
      z.replicas.dispose();
    },
  );

  void it(
    'two replicas on cuda0 (portable collectives) equal one replica on the whole batch',
    { timeout: 120_000 },
    async () => {
      const data = tokens(20_000, 6);
      const ref = await single(gpt, data);
      for (const mode of ['data', 'zero1'] as const) {
        const run = await parallel(gpt, data, ['cuda0#0', 'cuda0#1'], mode, 'portable');
        // Half the rows per GEMM: another tiling, another summation order.
        compare(run, ref, 2e-3, 1e-2, `${mode}, 2 replicas on cuda0 vs 1 replica`);
        run.replicas.dispose();
      }
    },
  );
});

const multi = skip || (gpus.length >= 2 ? false : `needs 2 GPUs, found ${gpus.length}`);
void describe('data parallel across GPUs with NCCL', { skip: multi }, () => {
  void it(
    'cuda0 + cuda1: data parallel and ZeRO-1 equal one GPU on the whole batch',
    { timeout: 180_000 },
    async () => {
      const data = tokens(20_000, 7);
      const ref = await single(gpt, data);
      for (const mode of ['data', 'zero1'] as const) {
        const run = await parallel(gpt, data, ['cuda0', 'cuda1'], mode, 'nccl');
        compare(run, ref, 2e-3, 1e-2, `${mode}, cuda0+cuda1 vs 1 GPU`);
        run.replicas.dispose();
      }
    },
  );
});
