/**
 * B.11 of research/anchors-dl.md, Tandem's side: Fashion-MNIST end to end with the product's training
 * loop (src/nn/train.ts: the MLP 784-512-512-10 or the small CNN, bf16, AdamW betas 0.9/0.999 eps 1e-8
 * weight decay 0.01 on every parameter, cosine decay from --lr (default 5e-3 MLP, 3e-3 CNN) to a tenth
 * of it over the run, no clipping, batch 512, 5 epochs, the last partial batch of each epoch dropped);
 * bench/torch/fashion.py is
 * PyTorch's side (eager, bf16 autocast) in the same device call, from the same initial weights and on
 * the same batches. On GPUs the training set stays on the device and batches are gathered there
 * (TrainSpec.imagesOnDevice; --batches host: copied from the host each step), as fashion.py does.
 *
 *   node dist/bench/fashion.js prepare --out DIR [--epochs 5 --batch 512 --seed 1 --precision bf16]
 *        writes DIR/mlp-init.safetensors, DIR/cnn-init.safetensors (the Trainer's seeded initial weights)
 *        and DIR/order.u32 (epochs × steps × batch image indices, u32 LE: imageBatch's shuffle).
 *   node dist/bench/fashion.js train --model mlp|cnn [--device cuda0] [--epochs 5 --batch 512 --seed 1
 *        --precision bf16 --lr L --target A --evals-per-epoch 4 --batches device|host]
 *        [--init DIR/mlp-init.safetensors] [--torch torch.jsonl]
 *   both take [--data DIR] [--train-limit N] [--test-limit N] (a slice, for a quick CPU run).
 *
 * JSON lines (the same on both sides): startup, first-steps (the first 10 losses), eval (test accuracy
 * at a point inside an epoch), epoch (mean train loss, test accuracy and loss, seconds so far), final
 * (accuracy, seconds to the target); with --torch, a compare line (first-step loss difference, accuracy
 * difference, time ratios).
 *
 * Timing rule (the same in fashion.py): the clock starts at the first real step, after loading the data,
 * opening the devices, uploading the data set and one warm-up (2 training steps on a throw-away model
 * and optimizer, and one evaluation batch: NVRTC compiles, cuBLAS/cuDNN handles, allocator pools),
 * reported as startupSeconds. evalsPerEpoch times an epoch (after ⌊k·steps/evals⌋ steps) the device is
 * drained and the clock stops while the 10,000 test images are evaluated (batches of 1000): `seconds`
 * counts training only, `secondsWithEval` evaluation too. Seconds to the target: the training time at
 * the first evaluation whose accuracy reaches it.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Runtime, type HostArray, type Observer } from 'tandem';
import {
  Cnn,
  FASHION_MNIST_DIR,
  Mlp,
  Trainer,
  epochOrder,
  evaluateClassifier,
  hostArrayOf,
  loadFashionMnist,
  loadSafetensors,
  saveParameters,
  type ImageSet,
  type Precision,
  type StepReport,
  type TrainSpec,
} from 'tandem/nn';
import { intOption, parse } from '../src/cli/output.js';

const { values, positionals } = parse(process.argv.slice(2), {
  model: { type: 'string', default: 'mlp' },
  device: { type: 'string', default: 'cuda0' },
  epochs: { type: 'string' },
  batch: { type: 'string' },
  seed: { type: 'string' },
  precision: { type: 'string', default: 'bf16' },
  lr: { type: 'string' },
  target: { type: 'string' },
  data: { type: 'string', default: FASHION_MNIST_DIR },
  'train-limit': { type: 'string' },
  'test-limit': { type: 'string' },
  out: { type: 'string' },
  init: { type: 'string' },
  torch: { type: 'string' },
  batches: { type: 'string' },
  'evals-per-epoch': { type: 'string' },
  sequences: { type: 'string' },
  static: { type: 'string' },
});
const mode = positionals[0] ?? 'train';
const model = String(values['model']);
if (model !== 'mlp' && model !== 'cnn') throw new Error(`--model must be mlp or cnn, got ${model}`);
const epochs = intOption(values['epochs'], 'epochs', 5);
const batch = intOption(values['batch'], 'batch', 512);
const seed = intOption(values['seed'], 'seed', 1, 0);
const precision = String(values['precision']) as Precision;
// Tuned so that both nets pass their targets within the 5 epochs (bench/torch/fashion.py's LR): at 1e-3
// the MLP ends at 87.1 % (Tandem bf16 on the CPU, PyTorch f32 alike).
// CNN 3e-3: on the H200 (19:33) neither side reached 90 % in 5 epochs at 2e-3; PyTorch did at 3e-3 (90.3 %).
const DEFAULT_LR = { mlp: 5e-3, cnn: 3e-3 } as const;
const lr = Number(values['lr'] ?? DEFAULT_LR[model]);
const target = Number(values['target'] ?? (model === 'mlp' ? 0.88 : 0.9));
const device = String(values['device']);
const FIRST_STEPS = 10;
/** What both sides must agree on for the comparison to mean anything. */
const SAME = [
  'epochs',
  'batch',
  'steps',
  'lr',
  'evalsPerEpoch',
  'trainImages',
  'testImages',
  'target',
] as const;
const evalsPerEpoch = intOption(values['evals-per-epoch'], 'evals-per-epoch', 4);

/** The steps after which the test set is evaluated: evalsPerEpoch evenly spaced points an epoch. */
function evalPoints(): number[] {
  const points: number[] = [];
  for (let e = 0; e < epochs; e++)
    for (let k = 1; k <= evalsPerEpoch; k++) {
      const p = e * stepsPerEpoch + Math.floor((k * stepsPerEpoch) / evalsPerEpoch);
      if (p > (points.at(-1) ?? 0)) points.push(p);
    }
  return points;
}
// Where batches are assembled: 'device' keeps the training set on the device and gathers each batch
// there (as fashion.py does on its side), 'host' copies each batch's pixels up (the Trainer's default).
const batches = String(values['batches'] ?? (device.startsWith('cpu') ? 'host' : 'device'));
if (batches !== 'device' && batches !== 'host')
  throw new Error(`--batches must be device or host, got ${batches}`);

const emit = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ side: 'tandem', ...line })}\n`);
};
const round = (x: number, digits = 4): number => Number(x.toFixed(digits));

/** The first `limit` images of a set (the whole set without a limit). */
function slice(set: ImageSet, limit: number | undefined): ImageSet {
  if (limit === undefined || limit >= set.count) return set;
  const px = set.height * set.width;
  return {
    ...set,
    images: set.images.subarray(0, limit * px),
    labels: set.labels.subarray(0, limit),
    count: limit,
  };
}

const t0 = performance.now();
const sets = await loadFashionMnist(String(values['data']));
const trainLimit =
  values['train-limit'] === undefined ? undefined : intOption(values['train-limit'], 'train-limit', 0);
const testLimit =
  values['test-limit'] === undefined ? undefined : intOption(values['test-limit'], 'test-limit', 0);
const train = slice(sets.train, trainLimit);
const test = slice(sets.test, testLimit);
const sequencesFlag = values['sequences'];
if (sequencesFlag !== undefined && sequencesFlag !== 'on' && sequencesFlag !== 'off')
  throw new Error(`--sequences: expected on or off, got ${String(sequencesFlag)}`);
const staticFlag = values['static'];
if (staticFlag !== undefined && staticFlag !== 'on' && staticFlag !== 'off')
  throw new Error(`--static: expected on or off, got ${String(staticFlag)}`);
const dataSeconds = (performance.now() - t0) / 1000;
const stepsPerEpoch = Math.floor(train.count / batch);
const specFor = (
  name: 'mlp' | 'cnn',
  dev: string,
  steps = epochs * stepsPerEpoch,
  imagesOnDevice = batches === 'device',
): TrainSpec => ({
  model: name,
  steps,
  batch,
  precision,
  device: dev,
  lr,
  seed,
  warmupSteps: 0,
  weightDecay: 0.01,
  maxNorm: 0,
  imagesOnDevice,
  // --sequences on|off: Nn's sequence mode (the Trainer's default for these models: off).
  ...(sequencesFlag === undefined ? {} : { sequences: sequencesFlag === 'on' }),
  // --static on|off: the first step recorded and replayed (TrainSpec.staticStep; a CUDA graph on a GPU),
  // the Trainer's default for these models on CUDA.
  ...(staticFlag === undefined ? {} : { staticStep: staticFlag === 'on' }),
});

const classifier = (t: Trainer): Mlp | Cnn => {
  if (t.built.kind !== 'classifier') throw new Error('not a classifier');
  const m = t.built.model;
  if (!(m instanceof Mlp) && !(m instanceof Cnn)) throw new Error('not the MLP or the CNN');
  return m;
};

if (mode === 'prepare') {
  const out = String(values['out'] ?? '/tmp/fashion');
  mkdirSync(out, { recursive: true });
  const rt = await Runtime.create({ backends: ['cpu'], log: () => undefined });
  try {
    for (const name of ['mlp', 'cnn'] as const) {
      const t = new Trainer(rt, specFor(name, 'cpu', undefined, false), { kind: 'images', train, test });
      await saveParameters(classifier(t), rt, join(out, `${name}-init.safetensors`));
    }
  } finally {
    await rt.close();
  }
  const order = new Uint32Array(epochs * stepsPerEpoch * batch);
  for (let e = 0; e < epochs; e++)
    order.set(epochOrder(train.count, seed, e).subarray(0, stepsPerEpoch * batch), e * stepsPerEpoch * batch);
  writeFileSync(join(out, 'order.u32'), order);
  emit({ event: 'prepared', out, count: train.count, epochs, stepsPerEpoch, batch, seed, precision });
} else if (mode === 'train') {
  await trainOnce();
} else {
  throw new Error(`unknown mode ${mode}: prepare or train`);
}

/** Every initial parameter equals the file's (PyTorch starts from that file): bit for bit. */
async function checkInit(rt: Runtime, c: Mlp | Cnn, path: string): Promise<void> {
  const file = await loadSafetensors(path);
  for (const [name, p] of c.namedParameters()) {
    const loaded = file.tensors.get(name);
    if (loaded === undefined) throw new Error(`${path} has no ${name}`);
    const mine: HostArray = await rt.read(p.data);
    const theirs = hostArrayOf(loaded);
    const differs = mine.length !== theirs.length || mine.some((v, i) => v !== theirs[i]);
    if (differs) throw new Error(`initial ${name} differs from ${path}: a different seed or precision?`);
  }
}

async function trainOnce(): Promise<void> {
  const backend = device.replace(/\d+$/, '');
  const s0 = performance.now();
  const rt = await Runtime.create({ backends: [...new Set(['cpu', backend])], log: () => undefined });
  try {
    const data = { kind: 'images', train, test } as const;
    // Warm-up on a throw-away model and optimizer (another seed): compiles and handles, not timed.
    const warm = new Trainer(rt, { ...specFor(model as 'mlp', device, 2), seed: seed + 1000 }, data);
    await warm.run();
    await evaluateClassifier(warm.nn, classifier(warm), test, 1000, Math.min(1000, test.count));
    warm.dispose();
    await rt.idle();
    const trainer = new Trainer(rt, specFor(model as 'mlp', device), data);
    const net = classifier(trainer);
    await rt.idle();
    // Data set upload (imagesOnDevice) and warm-up, as fashion.py counts its own; the init check is not.
    const startupSeconds = (performance.now() - s0) / 1000;
    if (values['init'] !== undefined) await checkInit(rt, net, String(values['init']));
    await rt.idle();
    emit({
      event: 'startup',
      model,
      device,
      precision,
      batches,
      dataSeconds: round(dataSeconds, 3),
      startupSeconds: round(startupSeconds, 3),
    });

    const losses: number[] = [];
    let trainMs = 0;
    let evalMs = 0;
    let reached: { seconds: number; withEval: number; epoch: number } | null = null;
    let lastAccuracy = NaN;
    const onStep = (r: StepReport): void => {
      losses.push(r.loss);
      if (r.step === FIRST_STEPS || (r.step === trainer.spec.steps && r.step < FIRST_STEPS))
        emit({ event: 'first-steps', model, losses: losses.slice(0, FIRST_STEPS) });
    };
    // Device time of the training tasks by op (the sum of task spans, off during evaluation): with
    // msPerStep it tells launch- or host-bound steps (busy ≪ wall) from kernel-bound ones.
    const busyUs = new Map<string, number>();
    let timing = false;
    const kind = device.replace(/\d+$/, '');
    const profiler: Observer = {
      onTaskEnd(e) {
        if (!timing || !e.deviceId.startsWith(kind)) return;
        busyUs.set(e.op, (busyUs.get(e.op) ?? 0) + Math.max(0, e.endUs - e.startUs));
      },
    };
    rt.addObserver(profiler);
    let from = 0;
    for (const end of evalPoints()) {
      // One run() per evaluation point, stopped at its step: evaluating inside a run would release the
      // losses the loop still has to read (it reads each one step behind the devices).
      const segment = performance.now();
      timing = true;
      const stop = new AbortController();
      await trainer.run(onStep, stop.signal, from, (done) => {
        if (done >= end) stop.abort();
        return Promise.resolve();
      });
      await rt.idle();
      from = end;
      trainMs += performance.now() - segment;
      timing = false;
      const e0 = performance.now();
      const score = await evaluateClassifier(trainer.nn, net, test, 1000);
      evalMs += performance.now() - e0;
      lastAccuracy = score.accuracy;
      const epoch = end / stepsPerEpoch;
      if (reached === null && score.accuracy >= target)
        reached = { seconds: trainMs / 1000, withEval: (trainMs + evalMs) / 1000, epoch: round(epoch, 3) };
      const at = {
        model,
        step: end,
        testAccuracy: round(score.accuracy),
        testLoss: round(score.loss),
        seconds: round(trainMs / 1000, 3),
        secondsWithEval: round((trainMs + evalMs) / 1000, 3),
      };
      if (end % stepsPerEpoch !== 0) emit({ event: 'eval', epoch: round(epoch, 3), ...at });
      else {
        const mean = losses.slice(end - stepsPerEpoch, end).reduce((x, y) => x + y, 0) / stepsPerEpoch;
        emit({ event: 'epoch', epoch, trainLoss: round(mean), ...at });
      }
    }
    const steps = trainer.spec.steps;
    const r = reached as { seconds: number; withEval: number; epoch: number } | null;
    const final = {
      event: 'final',
      model,
      device,
      precision,
      batches,
      epochs,
      batch,
      steps,
      lr,
      evalsPerEpoch,
      trainImages: train.count,
      testImages: test.count,
      testAccuracy: round(lastAccuracy),
      target,
      epochToTarget: r?.epoch ?? null,
      secondsToTarget: r === null ? null : round(r.seconds, 3),
      secondsToTargetWithEval: r === null ? null : round(r.withEval, 3),
      seconds: round(trainMs / 1000, 3),
      secondsWithEval: round((trainMs + evalMs) / 1000, 3),
      msPerStep: round(trainMs / steps, 3),
      startupSeconds: round(startupSeconds, 3),
      deviceBusyMsPerStep: round([...busyUs.values()].reduce((a, b) => a + b, 0) / 1000 / steps, 4),
      // CUDA: kernels launched one by one and through the launch batcher's automatic graphs (captures
      // of runs of 16 that repeated) — how the step's launches went out (undefined on other devices).
      launchBatcher: (
        rt.devices.find((d) => d.info.id === device) as { batcher?: { stats?: object } } | undefined
      )?.batcher?.stats,
      busiestOps: [...busyUs]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([op, us]) => `${op} ${round(us / 1000 / steps, 4)}`),
    };
    emit(final);
    if (values['torch'] !== undefined) emit(compare(final, losses, String(values['torch'])));
  } finally {
    await rt.close();
  }
}

interface TorchLine extends Partial<Record<(typeof SAME)[number], number>> {
  event?: string;
  model?: string;
  losses?: number[];
  testAccuracy?: number;
  secondsToTarget?: number | null;
  seconds?: number;
}

/** Tandem against PyTorch's output of the same run: same start, same accuracy (± 0.5 pt), time ratio. */
function compare(
  ours: { testAccuracy: number; secondsToTarget: number | null; seconds: number } & Record<
    (typeof SAME)[number],
    number
  >,
  losses: readonly number[],
  path: string,
): Record<string, unknown> {
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l.replace(/-?\bInfinity\b|\bNaN\b/g, 'null')) as TorchLine)
    .filter((l) => l.model === model);
  const first = lines.find((l) => l.event === 'first-steps')?.losses ?? [];
  const final = lines.find((l) => l.event === 'final');
  if (first.length === 0 || final === undefined)
    return { event: 'compare', model, error: `no ${model} run in ${path}` };
  const rel = (i: number): number => Math.abs(losses[i]! - first[i]!) / Math.abs(first[i]!);
  const n = Math.min(first.length, losses.length);
  const firstRel = rel(0);
  const accDiff = (ours.testAccuracy - (final.testAccuracy ?? NaN)) * 100;
  const ratio =
    ours.secondsToTarget === null || final.secondsToTarget == null
      ? null
      : ours.secondsToTarget / final.secondsToTarget;
  const mismatch = SAME.filter((k) => final[k] !== ours[k]);
  return {
    event: 'compare',
    model,
    ...(mismatch.length > 0 ? { mismatch: mismatch.map((k) => `${k}: ${ours[k]} vs ${final[k]}`) } : {}),
    firstLossTandem: losses[0],
    firstLossTorch: first[0],
    firstLossRelDiff: firstRel,
    // bf16 activations and a different summation order: 1e-2 relative (issue 15's bf16 parity bar).
    firstLossOk: firstRel <= 1e-2,
    maxRelDiffFirstSteps: Math.max(...Array.from({ length: n }, (_, i) => rel(i))),
    accuracyDiffPoints: round(accDiff, 2),
    accuracyOk: Math.abs(accDiff) <= 0.5,
    timeToTargetRatio: ratio === null ? null : round(ratio, 3),
    timeRatio: round(ours.seconds / (final.seconds ?? NaN), 3),
    timeOk: mismatch.length === 0 && ratio !== null && ratio <= 1.0,
  };
}
