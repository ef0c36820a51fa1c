/**
 * Bench B.2 (issue 15): the norm group's CUDA kernels beside PyTorch on the same GPU.
 *   - layernorm forward and backward, bf16 [65536, 768] (F.layer_norm / native_layer_norm_backward)
 *   - residual + layernorm, bf16 [65536, 768] (torch: a + r, then F.layer_norm)
 *   - the fused classifier softmax_xent, bf16 logits [8192, 50304] with V = 50257: loss and dlogits
 *     (torch: F.cross_entropy forward + backward on [8192, 50257])
 * The PyTorch side is bench/torch/nn_norm.py (same shapes, same JSON fields). For the ratio, either
 * give its output (--torch torch.jsonl) or let this bench run it first in its own process (--run-torch),
 * so the two never share the GPU. GB/s counts the minimum traffic (every input read once, every output
 * written once) for both sides, so the ratio is the ratio of times. One JSON line per measurement.
 *   node dist/bench/nn-norm.js [--reps 50] [--torch torch.jsonl | --run-torch]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DType, bytesPerElement, f32ToBf16 } from '../src/core/dtype.js';
import { seededRandom } from '../src/core/seeded-random.js';
import type { CudaDevice } from '../src/devices/cuda/cuda-device.js';
import type { CudaBuffer } from '../src/devices/cuda/memory-node.js';
import { createCudaBackend } from '../src/devices/cuda/backend.js';
import type { LaunchArg, Scalars, TensorDesc } from '../src/devices/device.js';
import { KERNEL_IMPLS } from '../src/kernels/register.js';
import { HostNode } from '../src/memory/host-node.js';

const args = process.argv.slice(2);
const REPS = Number(args[args.indexOf('--reps') + 1] ?? 50) || 50;
const runTorch = args.includes('--run-torch');
const torchFile = args.includes('--torch') ? args[args.indexOf('--torch') + 1] : undefined;
const [M, C] = [65536, 768];
const [ROWS, V, VP] = [8192, 50257, 50304];

const out = (o: Record<string, unknown>): void => console.log(JSON.stringify({ bench: 'nn-norm', ...o }));

function torchFigures(): Record<string, number> {
  if (!runTorch && torchFile === undefined) return {};
  const r = runTorch
    ? spawnSync('python3', ['bench/torch/nn_norm.py'], { encoding: 'utf8' })
    : { stdout: readFileSync(torchFile!, 'utf8'), stderr: '' };
  const figures: Record<string, number> = {};
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const o = JSON.parse(line) as { what?: string; ms?: number };
    if (o.what !== undefined && o.ms !== undefined) figures[o.what] = o.ms;
  }
  if (Object.keys(figures).length === 0) out({ note: `torch side failed: ${r.stderr.slice(-400)}` });
  return figures;
}

const host = new HostNode();
let taskId = 1 << 26;
const cb = (fn: (done: (e: Error | null) => void) => void): Promise<void> =>
  new Promise((res, rej) => fn((e) => (e ? rej(e) : res())));

function launch(d: CudaDevice, op: string, a: readonly LaunchArg[], scalars: Scalars): Promise<void> {
  const impl = KERNEL_IMPLS.find((e) => e.op === op && e.backend === 'cuda')!.impl;
  return cb((done) => d.queues[0]!.launch({ taskId: taskId++, op, impl, args: a, scalars, after: [] }, done));
}

/** A device tensor filled from a repeated block of seeded random values (ids in [0, max) for i32). */
async function tensor(d: CudaDevice, shape: number[], dtype: DType, max = 0): Promise<LaunchArg> {
  const n = shape.reduce((x, y) => x * y, 1);
  const desc: TensorDesc = { shape, dtype, bytes: n * bytesPerElement(dtype) };
  const h = host.alloc(desc.bytes);
  const rnd = seededRandom(n);
  const block = Math.min(n, 1 << 20);
  if (dtype === 'i32') {
    const v = new Int32Array(h.sab, 0, n);
    for (let i = 0; i < n; i++) v[i] = Math.floor(rnd() * max);
  } else if (dtype === 'bf16') {
    const v = new Uint16Array(h.sab, 0, n);
    for (let i = 0; i < block; i++) v[i] = f32ToBf16(rnd() * 2 - 1);
    for (let i = block; i < n; i += block) v.copyWithin(i, 0, Math.min(block, n - i));
  } else {
    const v = new Float32Array(h.sab, 0, n);
    for (let i = 0; i < n; i++) v[i] = rnd() * 2 - 1;
  }
  const buffer: CudaBuffer = d.node.alloc(desc.bytes);
  await cb((done) => d.upload(h, buffer, desc.bytes, done));
  host.free(h);
  return { buffer, desc };
}

/** Median over 5 rounds of (wall time of `REPS` queued launches) / REPS, in ms. */
async function time(d: CudaDevice, op: string, a: readonly LaunchArg[], scalars: Scalars): Promise<number> {
  for (let i = 0; i < 3; i++) await launch(d, op, a, scalars);
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    const all: Promise<void>[] = [];
    for (let i = 0; i < REPS; i++) all.push(launch(d, op, a, scalars));
    await Promise.all(all);
    rounds.push((performance.now() - t0) / REPS);
  }
  return rounds.sort((x, y) => x - y)[2]!;
}

function report(what: string, ms: number, bytes: number, torch: Record<string, number>): void {
  const t = torch[what];
  out({
    what,
    ms: Number(ms.toFixed(4)),
    gbps: Number((bytes / ms / 1e6).toFixed(1)),
    ...(t !== undefined
      ? {
          torch_ms: t,
          torch_gbps: Number((bytes / t / 1e6).toFixed(1)),
          speedup_vs_torch: Number((t / ms).toFixed(3)),
        }
      : {}),
  });
}

async function main(): Promise<void> {
  const torch = torchFigures();
  const st = await createCudaBackend().open({
    cacheDir: mkdtempSync(join(tmpdir(), 'tandem-nn-norm-')),
    hostNode: host,
    calibrate: false,
    options: {},
    log: () => {},
  });
  const d = st.devices[0] as CudaDevice | undefined;
  if (d === undefined) {
    out({ skipped: st.reason ?? 'no CUDA device' });
    return;
  }
  const bf = 'bf16';
  const act = M * C * 2;
  const stats = M * 4 * 2;
  const x = await tensor(d, [M, C], bf);
  const w = await tensor(d, [C], bf);
  const b = await tensor(d, [C], bf);
  const y = await tensor(d, [M, C], bf);
  const mean = await tensor(d, [M], 'f32');
  const rstd = await tensor(d, [M], 'f32');
  const fwd = await time(d, 'layernorm', [x, w, b, y, mean, rstd], {});
  report('layernorm_fwd', fwd, 2 * act + stats, torch);
  const dy = await tensor(d, [M, C], bf);
  const dx = await tensor(d, [M, C], bf);
  const dw = await tensor(d, [C], bf);
  const db = await tensor(d, [C], bf);
  const bwd = await time(d, 'layernorm_backward', [dy, x, w, mean, rstd, dx, dw, db], {});
  report('layernorm_bwd', bwd, 3 * act + stats, torch);
  report('layernorm_fwd_bwd', fwd + bwd, 5 * act + 2 * stats, torch);
  const r = await tensor(d, [M, C], bf);
  const res = await time(d, 'residual_layernorm', [x, r, dx, w, b, y, mean, rstd], {});
  report('residual_layernorm', res, 4 * act + stats, torch);
  for (const t of [x, w, b, y, mean, rstd, dy, dx, dw, db, r]) d.node.free(t.buffer as CudaBuffer);

  const logits = await tensor(d, [ROWS, VP], bf);
  const targets = await tensor(d, [ROWS], 'i32', V);
  const losses = await tensor(d, [ROWS], 'f32');
  // Logits are overwritten by their gradient each run: the values change, the work does not.
  const xent = await time(d, 'softmax_xent', [logits, targets, losses], { vocab: V, gradScale: 1 / ROWS });
  report('softmax_xent_fwd_bwd', xent, 2 * ROWS * V * 2 + ROWS * 8, torch);
  await d.close();
}

await main();
