/**
 * Optimizer kernels on CUDA beside PyTorch (bench/torch/optim.py, same sizes): one AdamW step over
 * --n f32 parameters (data resident on the GPU, submitted through the runtime) and the squared norm
 * of the gradient (sumsq), as effective GB/s of the bytes each must move (AdamW: p, m, v read and
 * written, g read = 28 bytes per element; sumsq: 4). Prints JSON lines.
 *
 *   npm run build && node dist/bench/optim.js [--n 67108864] [--reps 20]
 *   python3 bench/torch/optim.py --n 67108864 --reps 20
 */
import { intOption, parse } from '../src/cli/output.js';
import { fillRandom } from '../src/core/seeded-random.js';
import { Runtime } from '../src/runtime/runtime.js';
import type { Tensor } from '../src/runtime/runtime.js';

const { values } = parse(process.argv.slice(2), { n: { type: 'string' }, reps: { type: 'string' } });
const n = intOption(values['n'], 'n', 1 << 26, 1, 1 << 30);
const reps = intOption(values['reps'], 'reps', 20, 1, 1000);

const rt = await Runtime.create({ backends: ['cpu', 'cuda'], calibrate: false });
try {
  if (!rt.devices.some((d) => d.info.kind === 'cuda')) {
    const st = rt.backends.find((b) => b.kind === 'cuda');
    console.log(
      JSON.stringify({ bench: 'optim', skipped: `no CUDA device: ${st?.reason ?? 'unavailable'}` }),
    );
  } else {
    const random = (seed: number, lo: number): Float32Array =>
      fillRandom(new Float32Array(n), seed, lo, lo + 1);
    const p = rt.tensor([n], 'f32', random(1, -0.5));
    const g = rt.tensor([n], 'f32', random(2, -0.5));
    const m = rt.tensor([n], 'f32', random(3, -0.5));
    const v = rt.tensor([n], 'f32', random(4, 0.1));
    const norm = rt.tensor([1], 'f32', Float32Array.of(0));
    const run = async (
      kernel: string,
      args: Record<string, Tensor>,
      scalars: Record<string, number | boolean>,
    ): Promise<number> => {
      await rt.submit({ kernel, args, scalars, device: 'cuda' }).done; // warm: data moves to the GPU, program compiles
      const t0 = performance.now();
      const done: Promise<unknown>[] = [];
      for (let r = 0; r < reps; r++) done.push(rt.submit({ kernel, args, scalars, device: 'cuda' }).done);
      await Promise.all(done);
      return (performance.now() - t0) / 1000 / reps;
    };
    const sumsqS = await run('sumsq', { x: g, acc: norm }, {});
    const adamwS = await run(
      'adamw',
      { p, g, m, v, norm },
      { lr: 1e-3, step: 1, maxNorm: 1, skipNonFinite: true },
    );
    for (const [op, seconds, bytesPer] of [
      ['sumsq', sumsqS, 4],
      ['adamw', adamwS, 28],
    ] as const) {
      console.log(
        JSON.stringify({
          bench: 'optim',
          side: 'tandem',
          op,
          n,
          ms: +(seconds * 1e3).toFixed(3),
          gbps: +((bytesPer * n) / seconds / 1e9).toFixed(1),
        }),
      );
    }
  }
} finally {
  await rt.close();
}
