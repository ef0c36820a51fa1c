/**
 * B.7: GPT-2 124M scoring (bf16, 128-token inputs) through the interactive lane, closed loop at
 * concurrency 1..64, batching on (maxQueueDelayUs 0, 100, 1000; and full batches of 64 within 3 ms)
 * and off (maxBatchSize 1), one batch in flight or two (`instances`), kept plans of bucketed or exact
 * batch shapes, beside
 * PyTorch's offline forward of the same model at batch 1 and 64 (bench/torch/gpt2_infer.py, run in the
 * same call). Prints the issue's ratios.
 */
import { readFileSync } from 'node:fs';
import type { LoadReport } from '../src/service/client/load.js';
import { runSweepIsolated } from '../src/service/client/load-threads.js';
import { fmt, levelLine, type Lane } from './serve-common.js';

interface TorchInfer {
  batch: number;
  /** Forward time of one batch, ms (next-token logits of the last position, as the served scoring). */
  ms: number;
  sequencesPerSecond: number;
}

interface Variant {
  readonly name: string;
  readonly batching: Readonly<Record<string, unknown>>;
  readonly delayUs: number;
  /** The gpt config's `scoring` (kept plans); default bucketed shapes. */
  readonly scoring?: Readonly<Record<string, unknown>>;
}

const VARIANTS: readonly Variant[] = [
  { name: 'gpt-off', batching: { maxBatchSize: 1, maxQueueDelayUs: 0 }, delayUs: 0 },
  { name: 'gpt-d0', batching: { maxBatchSize: 64, maxQueueDelayUs: 0 }, delayUs: 0 },
  // The same with a kept plan per exact batch size (before bucketing): irregular sizes build and evict.
  {
    name: 'gpt-d0-exact',
    batching: { maxBatchSize: 64, maxQueueDelayUs: 0 },
    delayUs: 0,
    scoring: { bucketed: false },
  },
  { name: 'gpt-d100', batching: { maxBatchSize: 64, maxQueueDelayUs: 100 }, delayUs: 100 },
  { name: 'gpt-d1000', batching: { maxBatchSize: 64, maxQueueDelayUs: 1000 }, delayUs: 1000 },
  // Full batches: at c64 with delay 0 the clients settle into two cohorts of ~32 that alternate (one
  // is answered and sends again while the other's batch runs); waiting up to 3 ms for 64 keeps the
  // GPU on its most efficient batch.
  {
    name: 'gpt-full64',
    batching: { maxBatchSize: 64, preferredBatchSizes: [64], maxQueueDelayUs: 3000 },
    delayUs: 3000,
  },
  // Two batches in flight: the next batch is formed and submitted while the GPU runs the current one,
  // so the host's share of a batch (HTTP parse and reply of each request, stacking, reading the result)
  // overlaps the forward instead of adding to it.
  { name: 'gpt-d0-i2', batching: { maxBatchSize: 64, maxQueueDelayUs: 0, instances: 2 }, delayUs: 0 },
  {
    name: 'gpt-full64-i2',
    batching: { maxBatchSize: 64, preferredBatchSizes: [64], maxQueueDelayUs: 3000, instances: 2 },
    delayUs: 3000,
  },
];
const LEVELS = [1, 2, 4, 8, 16, 32, 64];
// Diagnosis (e.g. under --cpu-prof): GPT_LANE_VARIANTS=gpt-d0 GPT_LANE_LEVELS=64 runs only those; the
// issue's ratios are printed only for a full sweep.
const only = (env: string | undefined): string[] | undefined => env?.split(',').filter(Boolean);

export async function runGptBench(
  lane: Lane,
  o: { device: string; seconds: number; torchFile: string | undefined },
): Promise<unknown> {
  // 128 token ids, the same for every request (scoring cost does not depend on the values).
  const tokens = Array.from({ length: 128 }, (_, i) => (i * 7919) % 50257);
  const body = JSON.stringify({ inputs: { tokens } });
  const rows: Record<string, LoadReport[]> = {};
  const variantNames = only(process.env['GPT_LANE_VARIANTS']);
  const levels = only(process.env['GPT_LANE_LEVELS'])?.map(Number) ?? LEVELS;
  for (const v of VARIANTS) {
    if (variantNames && !variantNames.includes(v.name)) continue;
    await lane.register({
      name: v.name,
      kind: 'gpt',
      // Token ids in, no tokenizer: the GPU machine carries no tokenizer package, and scoring needs none.
      config: { preset: 'gpt2', precision: 'bf16', seed: 1, tokenizer: 'none', scoring: v.scoring ?? {} },
      placement: { kinds: [o.device] },
      batching: v.batching,
    });
    rows[v.name] = await runSweepIsolated(
      lane.target(v.name),
      levels,
      { warmupSeconds: 1, seconds: o.seconds },
      [{ body }],
      (r) => console.log(levelLine(v.name, r)),
    );
    // One model's weights at a time on the device.
    await lane.call('DELETE', `/v1/models/${v.name}`);
  }
  const torch: TorchInfer[] = o.torchFile
    ? readFileSync(o.torchFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as TorchInfer)
    : [];
  // The issue's ratios for whatever ran (a partial sweep — GPT_LANE_VARIANTS / GPT_LANE_LEVELS — prints
  // the ones its variants and levels allow).
  const at = (name: string, c: number): LoadReport | undefined =>
    rows[name]?.find((r) => r.concurrency === c);
  const t1 = torch.find((t) => t.batch === 1);
  const t64 = torch.find((t) => t.batch === 64);
  const off16 = at('gpt-off', 16);
  const lines: string[] = [];
  for (const v of VARIANTS.slice(1)) {
    const on16 = at(v.name, 16);
    const on64 = at(v.name, 64);
    const parts: string[] = [];
    if (on16 && off16)
      parts.push(
        `c16 on/off ${fmt(on16.inferPerSec / off16.inferPerSec, 2)}x (target >= 3x), p95 ${fmt(on16.client.p95)} vs off ${fmt(off16.client.p95)} ms (${on16.client.p95 < off16.client.p95 ? 'lower' : 'NOT lower'})`,
      );
    if (on64) {
      // The issue's bound is delay + 2 × the batch-64 compute time. The server's mean batch compute at
      // c64 is one reading (batches there are often smaller than 64, and with two in flight a batch's
      // compute includes waiting behind the other); PyTorch's batch-64 forward in the same call is a
      // fixed one. Both are printed; "met" needs both.
      const bound = v.delayUs / 1000 + 2 * on64.server.compute.mean;
      const fixed = t64 ? v.delayUs / 1000 + 2 * t64.ms : Infinity;
      const met = on64.client.p99 <= bound && on64.client.p99 <= fixed;
      parts.push(
        `c64 ${fmt(on64.inferPerSec, 0)} seq/s = ${t64 ? fmt(on64.inferPerSec / t64.sequencesPerSecond, 2) : '?'}x PyTorch batch-64 (target >= 0.7x)`,
        `c64 p99 ${fmt(on64.client.p99)} ms vs delay + 2 x batch compute ${fmt(bound)} ms (server mean) / ${t64 ? fmt(fixed) : '?'} ms (PyTorch b64) (${met ? 'met' : 'NOT met'})`,
      );
    }
    if (parts.length > 0) lines.push(`B.7 ${v.name}: ${parts.join('; ')}`);
  }
  const d0c1 = at('gpt-d0', 1);
  if (d0c1)
    lines.push(
      `B.7 delay 0, c1: p50 ${fmt(d0c1.client.p50)} ms vs PyTorch batch-1 forward ${t1 ? fmt(t1.ms) : '?'} ms + 0.3 (${t1 ? (d0c1.client.p50 <= t1.ms + 0.3 ? 'met' : 'NOT met') : '?'}); PyTorch batch-64 ${t64 ? `${fmt(t64.ms)} ms, ${fmt(t64.sequencesPerSecond, 0)} seq/s` : '?'}`,
    );
  for (const l of lines) console.log(l);
  return { rows, torch, lines };
}
