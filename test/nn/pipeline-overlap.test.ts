/**
 * The stages of a pipeline really run at the same time on two devices: on two emulated GPUs (the sim
 * backend paced in wall time, kernels not run) the trace shows both devices busy together for most of
 * the shorter one's busy time, with 1F1B and with GPipe — and with one micro-batch (nothing to overlap)
 * they never are, which is what makes the measure mean something.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { simBackend } from '../../src/devices/sim/backend.js';
import { PipelineTrainer } from '../../src/nn/parallel/pipeline.js';
import type { Observer, TaskEvent } from '../../src/obs/observer.js';
import { Runtime } from '../../src/runtime/runtime.js';

function spans(events: TaskEvent[], device: string): [number, number][] {
  const out = events.filter((e) => e.deviceId === device).map((e): [number, number] => [e.startUs, e.endUs]);
  out.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const s of out) {
    const last = merged[merged.length - 1];
    if (last !== undefined && s[0] <= last[1]) last[1] = Math.max(last[1], s[1]);
    else merged.push([s[0], s[1]]);
  }
  return merged;
}

const total = (xs: [number, number][]): number => xs.reduce((n, [a, b]) => n + b - a, 0);

function intersection(a: [number, number][], b: [number, number][]): number {
  let i = 0;
  let j = 0;
  let sum = 0;
  while (i < a.length && j < b.length) {
    const lo = Math.max(a[i]![0], b[j]![0]);
    const hi = Math.min(a[i]![1], b[j]![1]);
    if (hi > lo) sum += hi - lo;
    if (a[i]![1] < b[j]![1]) i++;
    else j++;
  }
  return sum;
}

async function overlapShare(schedule: '1f1b' | 'gpipe', microBatches: number): Promise<number> {
  const sim = simBackend({
    devices: ['sim0', 'sim1'].map((id) => ({
      id,
      type: 'gpu' as const,
      depth: 256,
      flops: 1e9,
      launchUs: 5,
    })),
    compute: false,
    paced: { bandwidth: 50e9, latencyUs: 10 },
  });
  const rt = await Runtime.create({ backends: [sim], calibrate: false, log: () => undefined });
  try {
    const tokens = Int32Array.from({ length: 1 << 14 }, (_, i) => (i * 7919) % 256);
    const trainer = new PipelineTrainer(
      rt,
      {
        model: 'gpt',
        preset: 'gpt-micro',
        gpt: { layers: 4 },
        steps: 1,
        batch: 16,
        seqLen: 32,
        precision: 'f32',
      },
      { kind: 'tokens', train: tokens },
      { devices: ['sim0', 'sim1'], microBatches, schedule },
    );
    const events: TaskEvent[] = [];
    const observer: Observer = { onTaskEnd: (e) => events.push(e) };
    rt.addObserver(observer);
    await trainer.run();
    await rt.idle();
    rt.removeObserver(observer);
    const a = spans(events, 'sim0');
    const b = spans(events, 'sim1');
    return intersection(a, b) / Math.min(total(a), total(b));
  } finally {
    await rt.close();
  }
}

void test(
  'two emulated devices: the stages overlap with 8 micro-batches, never with one',
  { timeout: 120_000 },
  async () => {
    const one = await overlapShare('1f1b', 8);
    const gpipe = await overlapShare('gpipe', 8);
    const none = await overlapShare('1f1b', 1);
    console.log(
      `# both devices busy: 1F1B ${(one * 100).toFixed(1)} %, GPipe ${(gpipe * 100).toFixed(1)} %, one micro-batch ${(none * 100).toFixed(1)} % of the shorter one's busy time`,
    );
    // With equal stages and m = 8 the ideal is (m − 1)/m = 87.5 % (each device idles one pass pair).
    assert.ok(one > 0.5, `1F1B overlap ${one}`);
    assert.ok(gpipe > 0.5, `GPipe overlap ${gpipe}`);
    assert.ok(none < 0.05, `one micro-batch: the stages wait for each other (${none})`);
  },
);
