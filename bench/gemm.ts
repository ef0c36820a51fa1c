/**
 * `tandem bench gemm --device cpu --n 2048 [--dtype f32] [--reps 7]`: GEMM through rt.submit beside
 * the same library called directly in the same process (OpenBLAS on the CPU), data resident, with
 * the ratio. `--device cuda` and `--device webgpu` hand over to their backend benchmarks.
 */
import { assertDType } from '../src/core/dtype.js';
import { TandemError } from '../src/core/errors.js';
import { checkGemmRows, randomData } from '../src/cli/gemm-check.js';
import { flops, intOption, parse, print, table } from '../src/cli/output.js';
import type { ReportProgress } from '../src/cli/progress.js';
import { loadOpenBlas } from '../src/devices/cpu/openblas.js';
import { Runtime } from '../src/runtime/runtime.js';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export interface CpuGemmBench {
  readonly n: number;
  readonly dtype: string;
  readonly tandemFlops: number;
  readonly directFlops: number;
  readonly ratio: number;
  readonly reps: number;
  readonly check: ReturnType<typeof checkGemmRows>;
}

export async function cpuGemmBench(
  n: number,
  dtype: 'f32' | 'f64',
  reps: number,
  progress: ReportProgress = () => undefined,
): Promise<CpuGemmBench> {
  const load = loadOpenBlas();
  if (!load.blas)
    throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `OpenBLAS is not available: ${load.reason}`);
  const blas = load.blas;
  const rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  try {
    const a = rt.tensor([n, n], dtype, randomData(dtype, n * n, 1));
    const b = rt.tensor([n, n], dtype, randomData(dtype, n * n, 2));
    const c = rt.tensor([n, n], dtype);
    const A = await rt.read(a);
    const B = await rt.read(b);
    const C = dtype === 'f32' ? new Float32Array(n * n) : new Float64Array(n * n);
    const direct = (): void => {
      if (dtype === 'f32')
        blas.sgemm(
          false,
          false,
          n,
          n,
          n,
          1,
          A as Float32Array,
          n,
          B as Float32Array,
          n,
          0,
          C as Float32Array,
          n,
        );
      else
        blas.dgemm(
          false,
          false,
          n,
          n,
          n,
          1,
          A as Float64Array,
          n,
          B as Float64Array,
          n,
          0,
          C as Float64Array,
          n,
        );
    };
    const viaRuntime = (): Promise<void> =>
      rt.submit({ kernel: 'gemm', args: { a, b, c }, device: 'cpu' }).done;
    await viaRuntime();
    direct();
    const tandem: number[] = [];
    const base: number[] = [];
    // Interleave the two so that the shared machine's load hits both alike.
    for (let r = 0; r < reps; r++) {
      progress(r / reps, `round ${r + 1} of ${reps}`);
      let t0 = performance.now();
      await viaRuntime();
      tandem.push((performance.now() - t0) / 1000);
      t0 = performance.now();
      direct();
      base.push((performance.now() - t0) / 1000);
    }
    progress(1, 'checking');
    const check = checkGemmRows(dtype, n, n, n, A, B, await rt.read(c));
    const fl = 2 * n ** 3;
    const tandemFlops = fl / median(tandem);
    const directFlops = fl / median(base);
    return { n, dtype, tandemFlops, directFlops, ratio: tandemFlops / directFlops, reps, check };
  } finally {
    await rt.close();
  }
}

/** `progress` is the CLI's bar (`tandem bench gemm` on a terminal; CPU only); a direct run passes none. */
export async function main(argv: string[], progress?: ReportProgress): Promise<number> {
  const device = argv[argv.indexOf('--device') + 1];
  if (argv.includes('--device') && device === 'webgpu') return (await import('./webgpu-gemm.js')).main(argv);
  if (argv.includes('--device') && device === 'cuda') {
    const path = './cuda-gemm.js'; // written with the CUDA backend; absent builds say so
    const mod = (await import(path)) as { main(a: string[]): Promise<number> };
    return mod.main(argv);
  }
  const { values } = parse(argv, {
    device: { type: 'string' },
    n: { type: 'string' },
    dtype: { type: 'string' },
    reps: { type: 'string' },
  });
  if (values['device'] !== undefined && values['device'] !== 'cpu') {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `--device must be cpu, cuda or webgpu, got ${String(values['device'])}`,
    );
  }
  const n = intOption(values['n'], 'n', 2048, 16, 16384);
  const dtype = assertDType(values['dtype'] ?? 'f32');
  if (dtype !== 'f32' && dtype !== 'f64')
    throw new TandemError('TANDEM_ERR_DTYPE', 'the CPU GEMM benchmark takes f32 or f64');
  const reps = intOption(values['reps'], 'reps', 7, 1, 1000);
  const r = await cpuGemmBench(n, dtype, reps, progress);
  print(!!values['json'], r, () =>
    [
      table([
        ['GEMM', 'TANDEM (rt.submit)', 'OPENBLAS DIRECT', 'RATIO'],
        [`${dtype} n=${n}`, flops(r.tandemFlops), flops(r.directFlops), `${r.ratio.toFixed(3)}x`],
      ]),
      `medians of ${reps} interleaved runs; check: max relative error ${r.check.maxRelError.toExponential(2)} ${r.check.ok ? 'OK' : 'FAILED'}`,
    ].join('\n'),
  );
  return r.check.ok ? 0 : 1;
}
