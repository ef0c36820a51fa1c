/**
 * The GPU side of B.7 without the lane: GPT-2 124M last-token scoring (bf16, 128-token inputs, top-5)
 * through `GptInference.last` in this process, at the given batch sizes — what a lane batch costs once it
 * is formed. Beside bench/torch/gpt2_infer.py's offline forward when its output is given, as a ratio.
 * `--sequences off` submits a task per kernel (the build before runtime sequences); on (default), each
 * pass is one sequence and small repeated shapes (batch × 128 ≤ 2048 rows) run from kept plans.
 *   node dist/bench/gpt-score.js [--batches 1,16,64] [--reps 50] [--device cuda0] [--torch file.jsonl]
 *     [--sequences on|off]
 */
import { readFileSync } from 'node:fs';
import { parse, intOption } from '../src/cli/output.js';
import { Nn } from '../src/nn/context.js';
import { GptInference } from '../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../src/nn/models/gpt.js';
import { Runtime } from '../src/runtime/runtime.js';

const { values } = parse(process.argv.slice(2), {
  batches: { type: 'string', default: '1,16,64' },
  reps: { type: 'string' },
  device: { type: 'string', default: 'cuda0' },
  torch: { type: 'string' },
  sequences: { type: 'string', default: 'on' },
});
const sequences = values['sequences'] !== 'off';
const device = String(values['device']);
const reps = intOption(values['reps'], 'reps', 50);
const SEQ = 128;
const torch = new Map<number, number>();
if (values['torch'] !== undefined)
  for (const l of readFileSync(String(values['torch']), 'utf8').split('\n'))
    if (l.startsWith('{')) {
      const r = JSON.parse(l) as { batch: number; ms: number };
      torch.set(r.batch, r.ms);
    }

const rt = await Runtime.create({ backends: [device.replace(/\d+$/, '')], log: () => undefined });
try {
  const inf = new GptInference(
    new Gpt(new Nn(rt, { precision: 'bf16', device, seed: 1 }), gptConfig('gpt2')),
    undefined,
    sequences,
  );
  for (const b of String(values['batches']).split(',').map(Number)) {
    const seqs = Array.from({ length: b }, (_, i) =>
      Array.from({ length: SEQ }, (_, j) => (i * 131 + j * 7919) % 50257),
    );
    for (let w = 0; w < 5; w++) await inf.last(seqs, { kind: 'topk', k: 5 }, { device });
    const times: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      await inf.last(seqs, { kind: 'topk', k: 5 }, { device });
      times.push(performance.now() - t0);
    }
    times.sort((x, y) => x - y);
    const ms = times[Math.floor(times.length / 2)]!;
    const t = torch.get(b);
    console.log(
      JSON.stringify({
        side: 'tandem',
        sequences,
        batch: b,
        seq: SEQ,
        ms,
        p90Ms: times[Math.floor(times.length * 0.9)],
        sequencesPerSecond: (b * 1000) / ms,
        ...(t === undefined ? {} : { torchMs: t, speedVsTorch: t / ms }),
      }),
    );
  }
} finally {
  await rt.close();
}
