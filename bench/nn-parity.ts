/**
 * Tandem's side of the GPT parity check with PyTorch (bench/torch/gpt_parity.py is the other side, run
 * in the same device call): loads the initial weights PyTorch wrote (safetensors), trains on the same
 * in-order token batches with the same AdamW, constant lr and clipping, prints one JSON line per step
 * {step, loss, norm}, then the validation loss; with --torch FILE (PyTorch's output) it prints the
 * per-step relative loss difference and whether it is within --tol.
 *   node dist/bench/nn-parity.js --weights W --tokens T.u16 --val V.u16 --config L,H,C,CTX,V,VP
 *        --steps 20 --batch 8 --seq 64 --lr 6e-4 --precision f32|bf16 --device cuda0 [--torch out.jsonl --tol 1e-4]
 *        [--precision f16 --inject 5,9 --loss-scaling device|host]
 */
import { readFileSync } from 'node:fs';
import { Runtime } from 'tandem';
import {
  AdamW,
  Gpt,
  Nn,
  TokenLoader,
  DeviceGradScaler,
  GradScaler,
  evaluateGpt,
  loadParameters,
  readTokenFile,
  saveParameters,
  type Precision,
} from 'tandem/nn';
import { intOption, parse } from '../src/cli/output.js';

const { values } = parse(process.argv.slice(2), {
  weights: { type: 'string' },
  tokens: { type: 'string' },
  val: { type: 'string' },
  config: { type: 'string', default: '4,4,128,128,50257,50304' },
  steps: { type: 'string' },
  batch: { type: 'string' },
  seq: { type: 'string' },
  lr: { type: 'string', default: '6e-4' },
  precision: { type: 'string', default: 'f32' },
  device: { type: 'string', default: 'cuda0' },
  'val-batches': { type: 'string' },
  torch: { type: 'string' },
  tol: { type: 'string', default: '1e-4' },
  'save-initial': { type: 'string' },
  inject: { type: 'string' },
  'loss-scaling': { type: 'string', default: 'device' },
});
const [layers, heads, width, context, vocab, paddedVocab] = String(values['config'])
  .split(',')
  .map(Number) as [number, number, number, number, number, number];
const steps = intOption(values['steps'], 'steps', 20);
const batch = intOption(values['batch'], 'batch', 8);
const seq = intOption(values['seq'], 'seq', 64);
const lr = Number(values['lr']);

const rt = await Runtime.create({
  backends: ['cpu', String(values['device']).replace(/\d+$/, '')],
  log: () => undefined,
});
try {
  const nn = new Nn(rt, { precision: values['precision'] as Precision, device: String(values['device']) });
  if (values['loss-scaling'] !== 'device' && values['loss-scaling'] !== 'host')
    throw new Error(`--loss-scaling: expected device or host, got ${String(values['loss-scaling'])}`);
  const deviceScaling = values['precision'] === 'f16' && values['loss-scaling'] === 'device';
  const model = new Gpt(nn, { layers, heads, width, context, vocab, paddedVocab });
  await loadParameters(model, String(values['weights']));
  // PyTorch's file read into Tandem and written back: PyTorch compares the two, tensor for tensor.
  if (values['save-initial'] !== undefined) await saveParameters(model, rt, String(values['save-initial']));
  const opt = new AdamW(nn, model.parameters(), {
    lr,
    beta1: 0.9,
    beta2: 0.95,
    eps: 1e-8,
    weightDecay: 0.1,
    decayMatricesOnly: true,
    maxNorm: 1,
    deviceScalars: deviceScaling,
  });
  const loader = new TokenLoader(readTokenFile(String(values['tokens'])), { batch, time: seq, vocab });
  // f16: dynamic loss scaling as torch.amp.GradScaler; --inject lists steps whose loss gradient is
  // multiplied by 1e6 (an overflow), as the PyTorch side multiplies its loss.
  // --loss-scaling device (the Trainer's default): the scale decided on the device (DeviceGradScaler), read
  // back after every step here only to compare with GradScaler's trajectory; host: GradScaler.
  const amp = deviceScaling ? new DeviceGradScaler(nn, opt) : null;
  const scaler = values['precision'] === 'f16' && amp === null ? new GradScaler() : null;
  const inject = new Set(
    String(values['inject'] ?? '')
      .split(',')
      .filter(Boolean)
      .map(Number),
  );
  const ours: { step: number; loss: number; norm: number; scale?: number; skipped?: boolean }[] = [];
  for (let s = 0; s < steps; s++) {
    const b = loader.next();
    const ids = nn.input(b.inputs, [batch, seq], 'i32');
    const targets = nn.input(b.targets, [batch * seq], 'i32');
    const boost = inject.has(s + 1) ? 1e6 : 1;
    let used = scaler?.scale ?? 1;
    const stepsBefore = opt.steps;
    if (amp !== null) {
      used = amp.host.scale; // synced after the previous step
      amp.seed();
    }
    nn.lossScale = (amp === null ? used : 1) * boost;
    const loss = model.loss(ids, targets);
    await loss.backward();
    let raw: number;
    let skipped = false;
    if (amp !== null) {
      amp.update(lr);
      raw = await opt.gradNorm();
      await amp.sync();
      skipped = opt.steps === stepsBefore;
    } else {
      opt.computeNorm();
      raw = await opt.gradNorm();
      if (scaler === null) opt.applyUpdate();
      else {
        skipped = !Number.isFinite(raw);
        if (!skipped) opt.applyUpdate({ gradScale: scaler.inverseScale });
        scaler.update(skipped);
      }
    }
    opt.zeroGrad();
    rt.free(ids.data);
    rt.free(targets.data);
    const norm = raw / (used * boost);
    const scaled = scaler !== null || amp !== null;
    const line = { step: s + 1, loss: await loss.item(), norm, ...(scaled ? { scale: used, skipped } : {}) };
    ours.push(line);
    console.log(JSON.stringify(line));
  }
  const valBatches = intOption(values['val-batches'], 'val-batches', 10);
  const val = await evaluateGpt(nn, model, readTokenFile(String(values['val'])), batch, seq, valBatches);
  console.log(JSON.stringify({ val }));
  if (values['torch'] !== undefined) {
    const theirs = readFileSync(String(values['torch']), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      // Python writes non-finite floats as NaN / Infinity, which JSON has not.
      .map((l) => l.replace(/-?\bInfinity\b|\bNaN\b/g, 'null'))
      .map((l) => JSON.parse(l) as { step?: number; loss?: number; norm?: number; val?: number });
    const tol = Number(values['tol']);
    let worst = 0;
    for (const o of ours) {
      const t = theirs.find((x) => x.step === o.step);
      if (t?.loss === undefined) throw new Error(`PyTorch has no step ${o.step}`);
      worst = Math.max(worst, Math.abs(o.loss - t.loss) / Math.abs(t.loss));
    }
    const tv = theirs.find((x) => x.val !== undefined)?.val ?? NaN;
    // fp16: the loss-scale trajectory and the skipped steps must be GradScaler's exactly.
    const scaleMismatch = ours
      .filter((o) => {
        const t = theirs.find((x) => x.step === o.step) as { scale?: number; skipped?: boolean } | undefined;
        return o.scale !== undefined && (t?.scale !== o.scale || t.skipped !== o.skipped);
      })
      .map((o) => o.step);
    console.log(
      JSON.stringify({
        precision: values['precision'],
        steps,
        maxRelLossDiff: worst,
        tol,
        withinTol: worst <= tol,
        valTandem: val,
        valTorch: tv,
        valRelDiff: Math.abs(val - tv) / tv,
        ...(scaler
          ? {
              skippedSteps: ours.filter((o) => o.skipped).map((o) => o.step),
              finalScale: scaler.scale,
              scaleMismatchSteps: scaleMismatch,
            }
          : {}),
      }),
    );
  }
} finally {
  await rt.close();
}
