/**
 * `node dist/bench/nn-attention.js [--batch 64,8] [--heads 12] [--seq 1024] [--dim 64] [--reps 20]
 * [--torch torch.jsonl]`: causal attention (GPT-2 layout, bf16) forward and forward+backward on CUDA
 * through rt.submit with the data resident on the GPU, timed over back-to-back runs (`time`).
 * Prints one JSON line per batch size: ms, TFLOP/s (causal: 4·B·H·T²·d/2 forward, 2.5x that backward),
 * and, given bench/torch/nn_attention.py's output, the ratio to F.scaled_dot_product_attention as
 * dispatched (cuDNN's kernels on Hopper) and to each backend it timed forced (flash = FlashAttention-2).
 */
import { readFileSync } from 'node:fs';
import { bf16ToF32 } from '../src/core/dtype.js';
import { TandemError } from '../src/core/errors.js';
import { randomData } from '../src/cli/gemm-check.js';
import { intOption, parse, reportError } from '../src/cli/output.js';
import { Runtime } from '../src/runtime/runtime.js';
import { perCall } from './per-call.js';

interface TorchTimes {
  readonly fwd_ms: number;
  readonly fwdbwd_ms: number;
}

interface TorchLine extends TorchTimes {
  readonly B: number;
  /** Each SDPA backend forced (flash, cudnn, efficient): its times, or why it could not run. */
  readonly backends?: Readonly<Record<string, TorchTimes | { readonly error: string }>>;
}

/** Tandem's speed against each forced backend that ran: `{flash: {fwd, fwdbwd}, …}` (ratios > 1: faster). */
function backendRatios(t: TorchLine, fwdMs: number, fwdBwdMs: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, b] of Object.entries(t.backends ?? {}))
    out[name] =
      'error' in b
        ? { error: b.error }
        : {
            torch_fwd_ms: b.fwd_ms,
            torch_fwdbwd_ms: b.fwdbwd_ms,
            fwd: b.fwd_ms / fwdMs,
            fwdbwd: b.fwdbwd_ms / fwdBwdMs,
          };
  return out;
}

function torchLines(file: string | undefined): TorchLine[] {
  if (file === undefined) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l) as TorchLine);
}

/** Worst |y − reference| over a few rows of head 0, batch 0 (float64 from the stored bf16 inputs). */
function checkRows(qkv: Uint16Array, y: Uint16Array, T: number, C: number, d: number): number {
  const scale = 1 / Math.sqrt(d);
  const at = (t: number, part: number, i: number): number => bf16ToF32(qkv[t * 3 * C + part * C + i]!);
  let worst = 0;
  for (const t of [0, 1, 17, T >> 1, T - 2, T - 1]) {
    const s = Array.from({ length: t + 1 }, (_, j) => {
      let dot = 0;
      for (let i = 0; i < d; i++) dot += at(t, 0, i) * at(j, 1, i);
      return scale * dot;
    });
    const m = Math.max(...s);
    const w = s.map((v) => Math.exp(v - m));
    const sum = w.reduce((a, b) => a + b, 0);
    for (let i = 0; i < d; i++) {
      let want = 0;
      for (let j = 0; j <= t; j++) want += (w[j]! / sum) * at(j, 2, i);
      worst = Math.max(worst, Math.abs(bf16ToF32(y[t * C + i]!) - want));
    }
  }
  return worst;
}

/** ms per step of `reps` back-to-back steps, after reps untimed (`perCall`: 2·reps less reps, median). */
async function time(reps: number, step: () => Promise<void>[]): Promise<number> {
  const wall = async (units: number): Promise<number> => {
    const t0 = performance.now();
    const runs: Promise<void>[] = [];
    for (let r = 0; r < units * reps; r++) runs.push(...step());
    await Promise.all(runs);
    return performance.now() - t0;
  };
  return (await perCall(wall, reps, 1)) * 1e3;
}

export async function main(argv: string[]): Promise<void> {
  const { values } = parse(argv, {
    batch: { type: 'string' },
    heads: { type: 'string' },
    seq: { type: 'string' },
    dim: { type: 'string' },
    reps: { type: 'string' },
    torch: { type: 'string' },
  });
  const batches = String(values['batch'] ?? '64,8')
    .split(',')
    .map((b) => intOption(b, 'batch', 64, 1, 1024));
  const H = intOption(values['heads'], 'heads', 12, 1, 128);
  const T = intOption(values['seq'], 'seq', 1024, 1, 65536);
  const d = intOption(values['dim'], 'dim', 64, 1, 128);
  const reps = intOption(values['reps'], 'reps', 20, 1, 10000);
  const torch = torchLines(values['torch'] as string | undefined);
  const C = H * d;
  const rt = await Runtime.create({ backends: ['cuda'], log: () => undefined });
  try {
    const dev = rt.devices.find((x) => x.info.kind === 'cuda');
    if (!dev) {
      const why = rt.backends.find((b) => b.kind === 'cuda')?.reason ?? 'no CUDA device';
      throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `CUDA is not available: ${why}`);
    }
    for (const B of batches) {
      const qkvData = randomData('bf16', B * T * 3 * C, 1) as Uint16Array;
      const qkv = rt.tensor([B, T, 3 * C], 'bf16', qkvData);
      const dy = rt.tensor([B, T, C], 'bf16', randomData('bf16', B * T * C, 2));
      const y = rt.tensor([B, T, C], 'bf16');
      const lse = rt.tensor([B, H, T], 'f32');
      const dqkv = rt.tensor([B, T, 3 * C], 'bf16');
      const scalars = { heads: H };
      const forward = (): Promise<void> =>
        rt.submit({ kernel: 'attention', args: { qkv, y, lse }, scalars, device: 'cuda' }).done;
      const backward = (): Promise<void> =>
        rt.submit({ kernel: 'attention_backward', args: { dy, qkv, y, lse, dqkv }, scalars, device: 'cuda' })
          .done;
      const fwdMs = await time(reps, () => [forward()]);
      const fwdBwdMs = await time(reps, () => [forward(), backward()]);
      const yHost = (await rt.read(y)) as Uint16Array;
      const maxError = checkRows(qkvData, yHost, T, C, d);
      const fwdFlops = 4 * B * H * ((T * T) / 2) * d;
      const t = torch.find((l) => l.B === B);
      const line = {
        bench: 'nn-attention',
        side: 'tandem',
        device: dev.info.name,
        B,
        H,
        T,
        d,
        dtype: 'bf16',
        // The tensor-core kernels' version (TANDEM_ATTN_MMA, docs/deep-learning-ops.md).
        kernels: process.env['TANDEM_ATTN_MMA'] || 'default',
        reps,
        fwd_ms: fwdMs,
        fwdbwd_ms: fwdBwdMs,
        fwd_tflops: fwdFlops / (fwdMs * 1e-3) / 1e12,
        fwdbwd_tflops: (3.5 * fwdFlops) / (fwdBwdMs * 1e-3) / 1e12,
        check_max_abs_error_y: maxError,
        ...(t
          ? {
              torch_fwd_ms: t.fwd_ms,
              torch_fwdbwd_ms: t.fwdbwd_ms,
              fwd_speed_vs_torch: t.fwd_ms / fwdMs,
              fwdbwd_speed_vs_torch: t.fwdbwd_ms / fwdBwdMs,
              speed_vs_backend: backendRatios(t, fwdMs, fwdBwdMs),
            }
          : {}),
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
      for (const x of [qkv, dy, y, lse, dqkv]) rt.free(x);
    }
  } finally {
    await rt.close();
  }
}

if (process.argv[1]?.endsWith('nn-attention.js')) {
  await main(process.argv.slice(2)).catch((e: unknown) => {
    process.exitCode = reportError(e, true);
  });
}
