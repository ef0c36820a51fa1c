/**
 * Bench B.9, Tandem side: safetensors save and load throughput on a large checkpoint (f32 tensors,
 * 1.5 GiB by default) in a directory of your choice. Prints JSON lines: best and median GB/s (1e9
 * bytes/s) over --reps runs, plus one durable save (fsync before the rename). Loads read a file the
 * page cache holds (just written): what a resume right after a save sees; a cold read measures the disk.
 * Every load is checked byte for byte against what was saved.
 *
 * Ops: `save`; `load` (into new buffers, which the OS must fault in page by page); `load_into` (into
 * buffers that already exist, as a resume into the model's parameters does); and two baselines of the
 * machine itself on the same bytes: `raw_write` (one plain write per tensor) and `touch_fresh`
 * (allocating and touching the same amount of new memory, no I/O: the ceiling of `load`).
 *
 *   npm run build && node dist/bench/safetensors.js [--mib 1536] [--tensors 24] [--reps 3] [--dir /tmp]
 *
 * The PyTorch side (torch.save/torch.load and safetensors.torch on the same sizes):
 *   python3 bench/torch/safetensors_bench.py --mib 1536 --tensors 24 --reps 3 --dir /tmp
 */
import { randomFillSync } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { intOption, parse } from '../src/cli/output.js';
import { type TensorToSave, loadSafetensors, saveSafetensors } from '../src/nn/safetensors.js';

const { values } = parse(process.argv.slice(2), {
  mib: { type: 'string' },
  tensors: { type: 'string' },
  reps: { type: 'string' },
  dir: { type: 'string' },
});
const mib = intOption(values['mib'], 'mib', 1536, 1, 1 << 16);
const count = intOption(values['tensors'], 'tensors', 24, 1, 1 << 16);
const reps = intOption(values['reps'], 'reps', 3, 1, 100);
const base = typeof values['dir'] === 'string' ? values['dir'] : '/tmp';

const perTensor = Math.floor((mib << 20) / count / 4);
const tensors: Record<string, TensorToSave> = {};
for (let i = 0; i < count; i++) {
  const data = new Float32Array(perTensor);
  randomFillSync(data);
  tensors[`layers.${i}.weight`] = { dtype: 'f32', shape: [perTensor], data };
}
const totalBytes = count * perTensor * 4;

function summary(op: string, seconds: number[]): void {
  const sorted = [...seconds].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  console.log(
    JSON.stringify({
      bench: 'safetensors',
      side: 'tandem',
      op,
      bytes: totalBytes,
      tensors: count,
      reps: seconds.length,
      best_gbps: +(totalBytes / sorted[0]! / 1e9).toFixed(3),
      median_gbps: +(totalBytes / median / 1e9).toFixed(3),
      median_s: +median.toFixed(4),
    }),
  );
}

async function rawWrite(path: string): Promise<void> {
  const fh = await open(path, 'w');
  try {
    let at = 0;
    for (const t of Object.values(tensors)) {
      const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      await fh.write(bytes, 0, bytes.length, at);
      at += bytes.length;
    }
  } finally {
    await fh.close();
  }
}

function touchFresh(): number {
  let sum = 0;
  for (let i = 0; i < count; i++) {
    const b = new Uint8Array(perTensor * 4);
    for (let j = 0; j < b.length; j += 4096) b[j] = 1;
    sum += b[0]!;
  }
  return sum;
}

function check(loaded: Awaited<ReturnType<typeof loadSafetensors>>): void {
  for (const [name, t] of Object.entries(tensors)) {
    const want = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    if (!want.equals(loaded.tensors.get(name)!.bytes)) throw new Error(`${name}: loaded bytes differ`);
  }
}

const dir = await mkdtemp(join(base, 'tandem-st-bench-'));
const path = join(dir, 'model.safetensors');
const timed = async (fn: () => Promise<unknown> | unknown): Promise<number> => {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
};
try {
  const runs: Record<string, number[]> = {
    save: [],
    load: [],
    load_into: [],
    raw_write: [],
    touch_fresh: [],
  };
  const destinations = new Map(Object.entries(tensors).map(([n]) => [n, new Uint8Array(perTensor * 4)]));
  for (let r = 0; r < reps; r++) {
    await rm(path, { force: true });
    runs.raw_write!.push(await timed(() => rawWrite(path)));
    await rm(path, { force: true });
    runs.save!.push(await timed(() => saveSafetensors(path, tensors)));
    let loaded: Awaited<ReturnType<typeof loadSafetensors>> | undefined;
    runs.load!.push(await timed(async () => (loaded = await loadSafetensors(path))));
    check(loaded!);
    loaded = undefined;
    runs.load_into!.push(
      await timed(
        async () => (loaded = await loadSafetensors(path, { into: (e) => destinations.get(e.name) })),
      ),
    );
    check(loaded!);
    loaded = undefined;
    runs.touch_fresh!.push(await timed(touchFresh));
  }
  for (const [op, seconds] of Object.entries(runs)) summary(op, seconds);
  await rm(path, { force: true });
  summary('save_durable', [await timed(() => saveSafetensors(path, tensors, { durable: true }))]);
} finally {
  await rm(dir, { recursive: true, force: true });
}
