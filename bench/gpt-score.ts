/**
 * The GPU side of B.7 without the lane: GPT-2 last-token scoring (bf16, 128-token inputs, top-5)
 * through `GptInference.last` in this process, at the given batch sizes — what a lane batch costs once it
 * is formed. Beside bench/torch/gpt2_infer.py's offline forward when its output is given, as a ratio.
 * `--sequences off` submits a task per kernel (the build before runtime sequences); on (default), each
 * pass is one sequence and repeated shapes run from kept plans (`--plan-rows`, 0: none).
 *
 * `--irregular lo-hi`: instead, `--reps` passes of batch sizes drawn at random in [lo, hi] (what a lane
 * forms under load), the same draw with bucketed plan shapes and with exact ones, side by side.
 *   node dist/bench/gpt-score.js [--batches 1,16,64] [--reps 50] [--device cuda0] [--torch file.jsonl]
 *     [--sequences on|off] [--plan-rows 8192] [--irregular 24-64] [--preset gpt2] [--precision bf16]
 *     [--seq 128] [--width 48]   (`--device sim0`: host cost only, a simulated GPU that computes nothing)
 */
import { readFileSync } from 'node:fs';
import { parse, intOption } from '../src/cli/output.js';
import { TandemError } from '../src/core/errors.js';
import { type Precision, Nn } from '../src/nn/context.js';
import { GptInference, type GptInferenceOptions } from '../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../src/nn/models/gpt.js';
import { simBackend } from '../src/devices/sim/backend.js';
import { Runtime } from '../src/runtime/runtime.js';
import { seededRandom } from '../src/core/seeded-random.js';

const { values } = parse(process.argv.slice(2), {
  batches: { type: 'string', default: '1,16,64' },
  reps: { type: 'string' },
  device: { type: 'string', default: 'cuda0' },
  torch: { type: 'string' },
  sequences: { type: 'string', default: 'on' },
  'plan-rows': { type: 'string' },
  irregular: { type: 'string' },
  preset: { type: 'string', default: 'gpt2' },
  precision: { type: 'string', default: 'bf16' },
  seq: { type: 'string' },
  width: { type: 'string' },
});
const sequences = values['sequences'] !== 'off';
const device = String(values['device']);
const reps = intOption(values['reps'], 'reps', 50);
const planRows = intOption(values['plan-rows'], 'plan-rows', 8192);
const SEQ = intOption(values['seq'], 'seq', 128);
const precision = String(values['precision']) as Precision;
const torch = new Map<number, number>();
if (values['torch'] !== undefined)
  for (const l of readFileSync(String(values['torch']), 'utf8').split('\n'))
    if (l.startsWith('{')) {
      const r = JSON.parse(l) as { batch: number; ms: number };
      torch.set(r.batch, r.ms);
    }

// `--width 48` keeps a sim device's host-side initialisation cheap (the kernels per pass do not change).
const arch = gptConfig(
  String(values['preset']),
  values['width'] === undefined ? {} : { width: intOption(values['width'], 'width', 768) },
);
function batchOf(b: number, salt = 0): number[][] {
  return Array.from({ length: b }, (_, i) =>
    Array.from({ length: SEQ }, (_, j) => (i * 131 + j * 7919 + salt * 17) % arch.vocab),
  );
}

// `--device sim0`: a simulated GPU that computes nothing and costs no time — only the host's work is timed.
const backend = device.startsWith('sim')
  ? simBackend({ devices: [{ id: device, type: 'gpu', depth: 256, launchUs: 0 }], compute: false })
  : device.replace(/\d+$/, '');
const rt = await Runtime.create({ backends: [backend], calibrate: false, log: () => undefined });
try {
  const model = new Gpt(new Nn(rt, { precision, device, seed: 1 }), arch);
  const inference = (o: GptInferenceOptions): GptInference => new GptInference(model, undefined, o);
  const head = { kind: 'topk', k: 5 } as const;
  if (values['irregular'] !== undefined) {
    const m = /^(\d+)-(\d+)$/.exec(String(values['irregular']));
    const lo = Number(m?.[1]);
    const hi = Number(m?.[2]);
    if (m === null || !(lo >= 1 && hi >= lo))
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', '--irregular takes lo-hi, 1 ≤ lo ≤ hi');
    const rnd = seededRandom(7);
    const sizes = Array.from({ length: reps }, () => lo + Math.floor(rnd() * (hi - lo + 1)));
    for (const bucketed of [true, false, true]) {
      const inf = inference({ sequences, plans: { maxRows: planRows, bucketed } });
      for (const b of sizes.slice(0, 5)) await inf.last(batchOf(b), head, { device });
      const t0 = performance.now();
      for (const [i, b] of sizes.entries()) await inf.last(batchOf(b, i), head, { device });
      const ms = performance.now() - t0;
      const n = sizes.reduce((s, b) => s + b, 0);
      console.log(
        JSON.stringify({
          side: 'tandem',
          irregular: `${lo}-${hi}`,
          bucketed,
          passes: reps,
          sequences: n,
          msPerPass: ms / reps,
          sequencesPerSecond: (n * 1000) / ms,
          plans: inf.keptPlans,
        }),
      );
      inf.dispose();
      await rt.idle();
    }
  } else {
    const inf = inference({ sequences, plans: { maxRows: planRows } });
    for (const b of String(values['batches']).split(',').map(Number)) {
      const seqs = batchOf(b);
      for (let w = 0; w < 5; w++) await inf.last(seqs, head, { device });
      const times: number[] = [];
      for (let r = 0; r < reps; r++) {
        const t0 = performance.now();
        await inf.last(seqs, head, { device });
        times.push(performance.now() - t0);
      }
      times.sort((x, y) => x - y);
      const ms = times[Math.floor(times.length / 2)]!;
      const t = torch.get(b);
      console.log(
        JSON.stringify({
          side: 'tandem',
          sequences,
          planRows,
          batch: b,
          seq: SEQ,
          ms,
          p90Ms: times[Math.floor(times.length * 0.9)],
          sequencesPerSecond: (b * 1000) / ms,
          ...(t === undefined ? {} : { torchMs: t, speedVsTorch: t / ms }),
        }),
      );
    }
  }
} finally {
  await rt.close();
}
