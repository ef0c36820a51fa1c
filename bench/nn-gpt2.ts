/**
 * GPT-2 training throughput (B.3 of research/anchors-dl.md): one training step = forward, backward and
 * AdamW (f32 master weights) on random tokens, as bench/torch/gpt2_train.py does for PyTorch in the same
 * device call. Prints one JSON line per batch size: tokens/s (B·T / median step), MFU against 989
 * TFLOP/s, peak device memory, and the host's share: the time the main thread spent submitting a step
 * against the step's time.
 * `--sequences on|off` sets Nn's sequence mode (each pass's kernels as a few runtime sequence tasks; Nn's
 * default is off, the Trainer's for a GPT on CUDA on), to compare the host's share with and without in one call. The token batches are made
 * before the timed loop (the host's share is Tandem's submit, not the bench's random numbers).
 *   node dist/bench/nn-gpt2.js [--preset gpt2] [--batch 64,16] [--steps 30] [--precision bf16] [--device cuda0]
 *     [--sequences on|off] [--static on|off] [--loss-scaling device|host]
 * `--loss-scaling` (fp16): the loss scale decided on the device (DeviceGradScaler, the Trainer's default)
 * or on the host from the norm read every step (GradScaler).
 * `--static on` records the first step and replays it for every later one (StaticStep; a CUDA graph from
 * the third step): per step the host writes the batch and the optimizer's device scalars and submits one
 * task — issue 15's "replay the step as a CUDA graph".
 */
import { Runtime, type Observer, type TaskEvent } from 'tandem';
import {
  AdamW,
  Gpt,
  DeviceGradScaler,
  GradScaler,
  Nn,
  StaticTraining,
  gptConfig,
  gptFlopsPerToken,
  type Precision,
} from 'tandem/nn';
import { intOption, parse } from '../src/cli/output.js';
import { graphStats, pollStats } from './poll-stats.js';

const { values } = parse(process.argv.slice(2), {
  preset: { type: 'string', default: 'gpt2' },
  batch: { type: 'string', default: '64' },
  steps: { type: 'string' },
  precision: { type: 'string', default: 'bf16' },
  device: { type: 'string', default: 'cuda0' },
  'seq-len': { type: 'string' },
  profile: { type: 'boolean' },
  sequences: { type: 'string' },
  static: { type: 'string' },
  'loss-scaling': { type: 'string', default: 'device' },
});
const steps = intOption(values['steps'], 'steps', 30);
const sequencesFlag = values['sequences'];
if (sequencesFlag !== undefined && sequencesFlag !== 'on' && sequencesFlag !== 'off')
  throw new Error(`--sequences: expected on or off, got ${sequencesFlag}`);
const staticFlag = values['static'] ?? 'off';
if (staticFlag !== 'on' && staticFlag !== 'off')
  throw new Error(`--static: expected on or off, got ${staticFlag}`);
const staticStep = staticFlag === 'on';
const lossScaling = values['loss-scaling'];
if (lossScaling !== 'device' && lossScaling !== 'host')
  throw new Error(`--loss-scaling: expected device or host, got ${String(lossScaling)}`);
const warmup = Math.min(10, Math.floor(steps / 3));
const H200_PEAK = 989e12;

/** Time the devices' completion pollers spent in callbacks so far (CUDA exposes it; others 0). */
function completionCallbackMs(rt: Runtime): number {
  let ms = 0;
  for (const d of rt.devices) ms += pollStats(d)?.callbackMs ?? 0;
  return ms;
}

const rt = await Runtime.create({
  backends: [String(values['device']).replace(/\d+$/, '')],
  log: () => undefined,
});
try {
  for (const batch of String(values['batch']).split(',').map(Number)) {
    const nn = new Nn(rt, {
      precision: values['precision'] as Precision,
      device: String(values['device']),
      seed: 1,
      ...(sequencesFlag === undefined ? {} : { sequences: sequencesFlag === 'on' }),
    });
    const config = gptConfig(String(values['preset']));
    const t = values['seq-len'] === undefined ? config.context : Number(values['seq-len']);
    const model = new Gpt(nn, config);
    const opt = new AdamW(nn, model.parameters(), {
      lr: 3e-4,
      beta2: 0.95,
      weightDecay: 0.1,
      decayMatricesOnly: true,
      maxNorm: 1,
      deviceScalars: staticStep || (values['precision'] === 'f16' && lossScaling === 'device'),
    });
    const amp = nn.precision === 'f16' && lossScaling === 'device' ? new DeviceGradScaler(nn, opt) : null;
    // A recorded step records fp16's device-side update (amp_update) with it, as the Trainer does.
    const replay = staticStep
      ? new StaticTraining(nn, opt, amp === null ? undefined : (lr) => amp.update(lr))
      : null;
    amp?.seed();
    let seed = 12345;
    const randomTokens = (): Int32Array =>
      Int32Array.from({ length: batch * t }, () => {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        return seed % config.vocab;
      });
    // Eight batches of inputs and targets made up front, used in turn (as a loader's batches would be).
    const batches = Array.from({ length: 8 }, () => ({ ids: randomTokens(), targets: randomTokens() }));
    // --profile: time per op over the timed steps from the task spans the runtime reports — launch to
    // completion as the host sees it, so in a GPU-bound run spans overlap and are not device time.
    const perOp = new Map<string, { us: number; count: number }>();
    const profiler: Observer = {
      onTaskEnd(e: TaskEvent) {
        if (!e.deviceId.startsWith('cuda')) return;
        const o = perOp.get(e.op) ?? { us: 0, count: 0 };
        o.us += Math.max(0, e.endUs - e.startUs);
        o.count++;
        perOp.set(e.op, o);
      },
    };
    const scaler = nn.precision === 'f16' && amp === null ? new GradScaler() : null;
    const stepMs: number[] = [];
    const hostMs: number[] = [];
    let last = performance.now();
    let lossValue = NaN;
    // Completion-side host time over the timed steps (CUDA: the poller's callbacks, where the runtime
    // finishes tasks and launches the work they release); with the submit time, issue 15's "submit and
    // bookkeeping" per step.
    let callbackMsAtWarmup = 0;
    // The previous step's loss is read after this step is queued, so the device never waits for the host.
    let previous: Awaited<ReturnType<typeof model.loss>> | null = null;
    let previousValue: Promise<number> | null = null;
    for (let i = 0; i < steps; i++) {
      if (values['profile'] === true && i === warmup) rt.addObserver(profiler);
      if (i === warmup) callbackMsAtWarmup = completionCallbackMs(rt);
      const h0 = performance.now();
      const data = batches[i % batches.length]!;
      if (replay !== null) {
        const queued = await replay.submit(
          {
            arrays: [
              { values: data.ids, shape: [batch, t], dtype: 'i32' },
              { values: data.targets, shape: [batch * t], dtype: 'i32' },
            ],
            loss: ([x, y]) => model.loss(x!, y!),
          },
          3e-4,
        );
        hostMs.push(performance.now() - h0);
        if (previousValue !== null) lossValue = await previousValue;
        previousValue = queued.loss;
        const now = performance.now();
        if (i >= warmup) stepMs.push(now - last);
        last = now;
        continue;
      }
      const ids = nn.input(data.ids, [batch, t], 'i32');
      const targets = nn.input(data.targets, [batch * t], 'i32');
      if (scaler !== null) nn.lossScale = scaler.scale;
      amp?.seed();
      const loss = model.loss(ids, targets);
      await loss.backward();
      if (amp !== null) amp.update(3e-4);
      else if (scaler === null) opt.step();
      else {
        // fp16: GradScaler's step, as the training loop takes it (a host read of the norm per step).
        opt.computeNorm();
        const finite = Number.isFinite(await opt.gradNorm());
        if (finite) opt.applyUpdate({ gradScale: scaler.inverseScale });
        scaler.update(!finite);
      }
      opt.zeroGrad();
      rt.free(ids.data);
      rt.free(targets.data);
      hostMs.push(performance.now() - h0);
      if (previous !== null) lossValue = await previous.item();
      previous = loss;
      const now = performance.now();
      if (i >= warmup) stepMs.push(now - last);
      last = now;
    }
    const callbackMsPerStep = (completionCallbackMs(rt) - callbackMsAtWarmup) / (steps - warmup);
    if (previous !== null) lossValue = await previous.item();
    if (previousValue !== null) lossValue = await previousValue;
    rt.removeObserver(profiler);
    stepMs.sort((a, b) => a - b);
    const median = stepMs[Math.floor(stepMs.length / 2)]!;
    const tokensPerSecond = (batch * t * 1000) / median;
    const flopsPerToken = gptFlopsPerToken(config, model.parameterCount(), t);
    const usage = rt.memoryUsage().find((u) => u.kind === 'cuda');
    const host = hostMs.slice(warmup).sort((a, b) => a - b)[Math.floor((steps - warmup) / 2)]!;
    console.log(
      JSON.stringify({
        side: 'tandem',
        preset: values['preset'],
        precision: values['precision'],
        sequences: nn.sequences,
        static: staticStep,
        attentionKernels: process.env['TANDEM_ATTN_MMA'] || 'default',
        ...(values['precision'] === 'f16' ? { lossScaling } : {}),
        ...(replay === null ? {} : { staticKernels: replay.kernels, graphs: graphStats(rt) }),
        batch,
        seqLen: t,
        params: model.parameterCount(),
        stepMs: median,
        tokensPerSecond,
        mfu989: (tokensPerSecond * flopsPerToken) / H200_PEAK,
        peakGiB: usage ? usage.peakBytes / 2 ** 30 : null,
        hostSubmitMs: host,
        hostShare: host / median,
        completionMsPerStep: callbackMsPerStep,
        hostBusyShare: (host + callbackMsPerStep) / median,
        finalLoss: lossValue,
      }),
    );
    if (perOp.size > 0) {
      const steps = stepMs.length;
      const total = [...perOp.values()].reduce((a, o) => a + o.us, 0);
      const top = [...perOp.entries()]
        .sort((a, b) => b[1].us - a[1].us)
        .map(([op, o]) => ({
          op,
          msPerStep: o.us / 1000 / steps,
          share: o.us / total,
          tasksPerStep: o.count / steps,
        }));
      console.log(JSON.stringify({ batch, profile: top }));
    }
    replay?.dispose();
    nn.release();
    opt.dispose();
    for (const p of model.parameters()) {
      rt.free(p.data);
      if (p.grad) rt.free(p.grad);
    }
  }
} finally {
  await rt.close();
}
