/**
 * kv_attention at a GPT-2 decode step (issue 16, B.8): `rows` sequences, one query row each, 12 heads of
 * 64, each attending to its own cached prefix (positions drawn uniformly in [prompt, prompt + maxNew),
 * seeded). Times back-to-back launches on the GPU and reports the K and V bytes the step must read per
 * launch as GB/s (the op is memory-bound: that figure against the HBM's is its efficiency). Run it with
 * TANDEM_KV_ATTN_TEXT=scalar for the scalar text beside the default (vector) one.
 *   node dist/bench/kv-attention.js [--device cuda0] [--rows 256] [--positions 288] [--prompt 32] [--reps 50]
 */
import { intOption, parse } from '../src/cli/output.js';
import { fillRandom, seededRandom } from '../src/core/seeded-random.js';
import { Runtime } from '../src/runtime/runtime.js';

const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cuda0' },
  rows: { type: 'string' },
  positions: { type: 'string' },
  prompt: { type: 'string' },
  reps: { type: 'string' },
  dtype: { type: 'string', default: 'bf16' },
});
const device = String(values['device']);
const rows = intOption(values['rows'], 'rows', 256);
const P = intOption(values['positions'], 'positions', 288);
const prompt = intOption(values['prompt'], 'prompt', 32);
const reps = intOption(values['reps'], 'reps', 50);
const dtype = String(values['dtype']) === 'f16' ? 'f16' : 'bf16';
const H = 12;
const d = 64;
const C = H * d;

const rt = await Runtime.create({ backends: [device.replace(/\d+$/, '')], log: () => undefined });
try {
  const rnd = seededRandom(16);
  const pos = Int32Array.from({ length: rows }, () => prompt + Math.floor(rnd() * (P - prompt)));
  const args = {
    qkv: rt.tensor([rows, 3 * C], dtype, fillRandom(new Float32Array(rows * 3 * C), 1)),
    slot: rt.tensor(
      [rows],
      'i32',
      Int32Array.from({ length: rows }, (_, i) => i),
    ),
    pos: rt.tensor([rows], 'i32', pos),
    kcache: rt.tensor([rows, P, C], dtype, fillRandom(new Float32Array(rows * P * C), 2)),
    vcache: rt.tensor([rows, P, C], dtype, fillRandom(new Float32Array(rows * P * C), 3)),
    y: rt.tensor([rows, C], dtype),
  };
  const run = (): Promise<void> =>
    rt.submit({ kernel: 'kv_attention', args, scalars: { heads: H }, device }).done;
  await run();
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    await Promise.all(Array.from({ length: reps }, run));
    rounds.push((performance.now() - t0) / reps);
  }
  const ms = rounds.sort((a, b) => a - b)[2]!;
  const bytes = pos.reduce((s, p) => s + (p + 1) * C * 2 * 2, 0);
  console.log(
    JSON.stringify({
      bench: 'kv-attention',
      text: process.env['TANDEM_KV_ATTN_TEXT'] === 'scalar' ? 'scalar' : 'default',
      dtype,
      rows,
      heads: H,
      headDim: d,
      positions: P,
      meanPrefix: pos.reduce((s, p) => s + p + 1, 0) / rows,
      ms,
      gbPerSec: bytes / (ms * 1e-3) / 1e9,
    }),
  );
  for (const t of Object.values(args)) rt.free(t);
} finally {
  await rt.close();
}
