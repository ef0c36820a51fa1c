/**
 * Data parallelism and ZeRO-1 on the CPU with 2 and 3 replicas sharing cpu0 (the portable
 * collectives): a few steps of the MLP (f64) and of gpt-micro (f32, clipping on) give the losses and
 * parameters of ONE replica trained on the whole batch; every replica holds identical parameters after
 * every step; ZeRO-1 equals data parallelism and holds 1/N of the optimizer state per rank; the
 * buckets' all-reduces are submitted during the backward pass, not after it; bad input is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { buildReplicas, Replicas, trainDataParallel, Zero1 } from '../../src/nn/parallel/index.js';
import { Trainer, type TrainData, type TrainSpec } from '../../src/nn/train.js';
import type { TaskEvent } from '../../src/obs/observer.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { cpuRuntime } from '../runtime/helpers.js';
import { randomImages, randomTokens } from './train-fixtures.js';
import { parallelRun, singleRun, type Run } from './parallel-runs.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

const images = randomImages;
const tokens = randomTokens;

const single = (spec: TrainSpec, data: TrainData): Promise<Run> => singleRun(rt, spec, data, 'cpu0');
const parallel = (
  spec: TrainSpec,
  data: TrainData,
  ranks: string[],
  mode: 'data' | 'zero1',
  bucketBytes?: number,
): Promise<Run & { replicas: Replicas }> =>
  parallelRun(rt, spec, data, ranks, mode, bucketBytes ? { bucketBytes } : {});

function near(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i]! - want[i]!) / (1 + Math.abs(want[i]!));
    if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
  }
  assert.ok(worst <= tol, `${what}: max relative difference ${worst} > ${tol}`);
}

function sameRun(
  a: { losses: number[]; params: Float64Array[] },
  b: typeof a,
  tol: number,
  what: string,
): void {
  near(a.losses, b.losses, tol, `${what} losses`);
  a.params.forEach((p, i) => near(p, b.params[i]!, tol, `${what} parameter ${i}`));
}

const mlp: TrainSpec = {
  model: 'mlp',
  steps: 3,
  batch: 12,
  precision: 'f64',
  lr: 1e-2,
  seed: 5,
  maxNorm: 0.5,
};
const gpt: TrainSpec = {
  model: 'gpt',
  preset: 'gpt-micro',
  steps: 3,
  batch: 6,
  seqLen: 16,
  precision: 'f32',
  lr: 3e-3,
  seed: 9,
};

void describe('data parallel on the CPU (portable collectives)', () => {
  void it(
    'MLP f64, 2 and 3 replicas: the whole-batch losses and parameters, replicas identical every step',
    { timeout: 120_000 },
    async () => {
      const data = images(48, 3);
      const ref = await single(mlp, data);
      for (const n of [2, 3]) {
        const ranks = Array.from({ length: n }, (_, i) => `cpu0#${i}`);
        const run = await parallel(mlp, data, ranks, 'data');
        sameRun(run, ref, 1e-10, `${n} replicas`);
        run.replicas.dispose();
      }
    },
  );

  void it(
    'gpt-micro f32 (clipping on), 2 and 3 replicas with several buckets: the whole-batch run',
    { timeout: 180_000 },
    async () => {
      const data = tokens(4000, 11);
      const ref = await single(gpt, data);
      for (const n of [2, 3]) {
        const ranks = Array.from({ length: n }, (_, i) => `cpu0#${i}`);
        const run = await parallel(gpt, data, ranks, 'data', 8 * 1024);
        assert.ok(run.replicas.buckets.length > 3, `${run.replicas.buckets.length} buckets`);
        sameRun(run, ref, 2e-5, `${n} replicas`);
        run.replicas.dispose();
      }
    },
  );

  void it('MLP fp16, 2 replicas, each deciding the loss scale on its device: as on the host, the whole-batch losses', async () => {
    const spec: TrainSpec = { ...mlp, precision: 'f16' };
    const data = images(48, 3);
    const ranks = ['cpu0#0', 'cpu0#1'];
    const device = await parallel(spec, data, ranks, 'data');
    const host = await parallel({ ...spec, lossScaling: 'host' }, data, ranks, 'data');
    // The same all-reduced gradients and the same decisions: the same numbers as the host's scaling.
    sameRun(device, host, 0, 'fp16 data parallel, scale on the device vs the host');
    // and the whole batch's losses on one replica (fp16 gradients summed in another order; AdamW moves
    // a parameter by up to lr whatever its gradient's size, so the parameters are not compared).
    near(device.losses, (await single(spec, data)).losses, 2e-3, 'fp16 losses vs one replica');
    device.replicas.dispose();
    host.replicas.dispose();
  });

  void it('after the all-reduce every replica holds the whole batch’s gradients (not their sum)', async () => {
    const data = tokens(4000, 13);
    const spec = { ...gpt, steps: 1 };
    const whole = new Trainer(rt, { ...spec, device: 'cpu0' }, data);
    await whole.submitStep().backward();
    const want = await Promise.all(whole.built.model.parameters().map((p) => p.gradValues()));
    whole.optimizer.dispose();
    const replicas = await buildReplicas(rt, spec, data, ['cpu0#0', 'cpu0#1', 'cpu0#2'], 'data', {
      bucketBytes: 4096,
    });
    await replicas.forwardBackward();
    for (const ps of replicas.params)
      for (let i = 0; i < ps.length; i++) near(await ps[i]!.gradValues(), want[i]!, 1e-5, `gradient ${i}`);
    replicas.dispose();
  });

  void it('submits each bucket’s all-reduce during the backward pass, before the earlier layers’ gradients', async () => {
    const events: TaskEvent[] = [];
    const observer = { onTaskEnd: (e: TaskEvent) => void events.push(e) };
    const replicas = await buildReplicas(
      rt,
      { ...mlp, steps: 1 },
      images(48, 4),
      ['cpu0#0', 'cpu0#1'],
      'data',
      {
        bucketBytes: 1,
      },
    );
    rt.addObserver(observer);
    try {
      await replicas.forwardBackward();
      await rt.idle();
    } finally {
      rt.removeObserver(observer);
    }
    events.sort((a, b) => a.taskId - b.taskId);
    const firstReduce = events.findIndex((e) => e.name.startsWith('allReduce'));
    assert.ok(firstReduce > 0, 'an all-reduce ran');
    const laterGradient = events.slice(firstReduce).find((e) => !e.name.startsWith('allReduce'));
    assert.ok(laterGradient, 'backward tasks were submitted after the first bucket’s all-reduce');
    replicas.dispose();
  });
});

void describe('ZeRO-1 on the CPU', () => {
  void it(
    'MLP f64: equals data parallelism and the whole batch; each rank holds 1/N of the optimizer state',
    { timeout: 120_000 },
    async () => {
      const data = images(48, 6);
      const ref = await single(mlp, data);
      const dp = await parallel(mlp, data, ['cpu0#0', 'cpu0#1'], 'data');
      dp.replicas.dispose();
      for (const n of [2, 3]) {
        const ranks = Array.from({ length: n }, (_, i) => `cpu0#${i}`);
        const z = await parallel(mlp, data, ranks, 'zero1', 64 * 1024);
        sameRun(z, dp, 1e-10, `ZeRO-1 ${n} ranks vs data parallel`);
        sameRun(z, ref, 1e-10, `ZeRO-1 ${n} ranks vs one replica`);
        const total = ref.params.reduce((s, p) => s + p.length, 0) * 2 * 8; // m and v in f64
        const perRank = (z.replicas.reduction as Zero1).stateBytesPerRank();
        for (const b of perRank)
          assert.ok(Math.abs(b - total / n) <= 2 * n * 8 * z.replicas.buckets.length, `${b} vs ${total / n}`);
        z.replicas.dispose();
      }
    },
  );

  void it(
    'gpt-micro f32: equals the whole-batch run (global-norm clipping from the reduce-scattered shards)',
    { timeout: 180_000 },
    async () => {
      const data = tokens(4000, 12);
      const ref = await single(gpt, data);
      const z = await parallel(gpt, data, ['cpu0#0', 'cpu0#1'], 'zero1', 8 * 1024);
      sameRun(z, ref, 2e-5, 'ZeRO-1 2 ranks');
      z.replicas.dispose();
    },
  );
});

void describe('data parallel and ZeRO-1 in sequence mode (kernels collected, collectives submitted directly)', () => {
  void it(
    'equal the whole-batch run without sequences: every collective sees its inputs written',
    { timeout: 120_000 },
    async () => {
      const data = images(48, 21);
      const ref = await single(mlp, data);
      for (const mode of ['data', 'zero1'] as const) {
        const r = await parallel({ ...mlp, sequences: true }, data, ['cpu0#0', 'cpu0#1'], mode, 64 * 1024);
        assert.ok(r.replicas.trainers.every((t) => t.nn.sequences));
        sameRun(r, ref, 1e-12, `${mode} with sequences`);
        r.replicas.dispose();
      }
    },
  );
});

void describe('ZeRO-1 in bf16', () => {
  void it(
    'gpt-micro bf16 (f32 masters in the pieces): the same losses and parameters as data parallelism',
    { timeout: 120_000 },
    async () => {
      const data = tokens(4000, 14);
      const spec: TrainSpec = { ...gpt, precision: 'bf16', batch: 4 };
      const dp = await parallel(spec, data, ['cpu0#0', 'cpu0#1'], 'data', 4096);
      dp.replicas.dispose();
      const z = await parallel(spec, data, ['cpu0#0', 'cpu0#1'], 'zero1', 4096);
      // The clipping norm is summed in another order: a master may round to the neighbouring bf16 value.
      sameRun(z, dp, 2 ** -8, 'ZeRO-1 bf16 vs data parallel');
      z.replicas.dispose();
    },
  );
});

void describe('trainDataParallel', () => {
  void it('trains and reports every step through onStep', async () => {
    const steps: number[] = [];
    const out = await trainDataParallel(rt, { ...mlp, steps: 2 }, images(48, 8), {
      devices: ['cpu0#0', 'cpu0#1'],
      mode: 'zero1',
      onStep: (r) => steps.push(r.step),
    });
    assert.deepEqual(steps, [1, 2]);
    assert.equal(out.steps, 2);
    assert.ok(Number.isFinite(out.finalLoss));
  });

  void it('refuses bad devices, batches and modes with stable codes', async () => {
    const data = images(48, 9);
    const bad = async (devices: string[], mode: string, want: string, batch = 12): Promise<void> =>
      assert.rejects(
        trainDataParallel(rt, { ...mlp, batch }, data, { devices, mode: mode as 'data' }),
        (e) => isTandemError(e) && e.code === want,
        `${devices.join(',')} ${mode} → ${want}`,
      );
    await bad([], 'data', 'TANDEM_ERR_INVALID_ARGUMENT');
    await bad(['cpu0', 'cpu0'], 'data', 'TANDEM_ERR_INVALID_ARGUMENT');
    await bad(['cpu0#0', 'cuda9'], 'data', 'TANDEM_ERR_NO_DEVICE');
    await bad(['cpu0#0', 'cpu0#1'], 'data', 'TANDEM_ERR_INVALID_ARGUMENT', 13);
    await bad(['cpu0#0', 'cpu0#1'], 'pipeline-ish', 'TANDEM_ERR_INVALID_ARGUMENT');
    await assert.rejects(
      trainDataParallel(rt, { ...mlp, staticStep: true }, data, {
        devices: ['cpu0#0', 'cpu0#1'],
        mode: 'data',
      }),
      (e) => isTandemError(e) && e.code === 'TANDEM_ERR_UNSUPPORTED' && /recorded step/.test(e.message),
      'an explicit recorded step over two replicas is refused, not ignored',
    );
    await assert.rejects(
      trainDataParallel(rt, { ...mlp, precision: 'f16' }, data, {
        devices: ['cpu0#0', 'cpu0#1'],
        mode: 'zero1',
      }),
      (e) => isTandemError(e) && (e.code === 'TANDEM_ERR_UNSUPPORTED' || e.code === 'TANDEM_ERR_DTYPE'),
    );
  });
});
