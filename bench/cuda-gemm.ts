/**
 * `tandem bench gemm --device cuda --n 8192 --dtype bf16 [--precision tf32] [--reps 20]`: GEMM through
 * rt.submit with the data resident on the GPU, beside the same cuBLAS call made directly on the device in
 * the same process (no runtime, no task), both timed by wall clock to completion, with the ratio.
 */
import { assertDType } from '../src/core/dtype.js';
import { TandemError } from '../src/core/errors.js';
import { checkGemmRows, randomData } from '../src/cli/gemm-check.js';
import { flops, intOption, parse, print, reportError, table } from '../src/cli/output.js';
import type { CudaDevice } from '../src/devices/cuda/cuda-device.js';
import type { GemmPrecision } from '../src/devices/cuda/kernel-api.js';
import { HostNode } from '../src/memory/host-node.js';
import { Runtime } from '../src/runtime/runtime.js';

export interface CudaGemmBench {
  readonly n: number;
  readonly dtype: string;
  readonly precision: GemmPrecision;
  readonly device: string;
  readonly tandemFlops: number;
  readonly directFlops: number;
  readonly ratio: number;
  readonly reps: number;
  readonly check: ReturnType<typeof checkGemmRows>;
}

const done = (fn: (cb: (e: Error | null) => void) => void): Promise<void> =>
  new Promise((res, rej) => fn((e) => (e ? rej(e) : res())));

export async function cudaGemmBench(
  n: number,
  dtype: 'f32' | 'f64' | 'f16' | 'bf16',
  precision: GemmPrecision,
  reps: number,
): Promise<CudaGemmBench> {
  const rt = await Runtime.create({ backends: ['cuda'], calibrate: true, log: () => undefined });
  try {
    const dev = rt.devices.find((d) => d.info.kind === 'cuda') as CudaDevice | undefined;
    if (!dev) {
      const why = rt.backends.find((b) => b.kind === 'cuda')?.reason ?? 'no CUDA device';
      throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `CUDA is not available: ${why}`);
    }
    const A = randomData(dtype, n * n, 1);
    const B = randomData(dtype, n * n, 2);
    const a = rt.tensor([n, n], dtype, A);
    const b = rt.tensor([n, n], dtype, B);
    const c = rt.tensor([n, n], dtype);
    const scalars = { alpha: 1, beta: 0, precision };
    const submit = (): Promise<void> =>
      rt.submit({ kernel: 'gemm', args: { a, b, c }, scalars, device: 'cuda' }).done;
    await submit(); // moves a and b to the GPU: later runs find them resident
    let t0 = performance.now();
    const runs: Promise<void>[] = [];
    for (let r = 0; r < reps; r++) runs.push(submit());
    await Promise.all(runs);
    const tandemS = (performance.now() - t0) / 1000;
    const check = checkGemmRows(dtype, n, n, n, A, B, await rt.read(c), 8, precision);

    // The same library call on the same GPU without the runtime.
    const host = new HostNode();
    const bytes = A.byteLength;
    const bufs = [A, B, null].map((x) => {
      const buf = dev.node.alloc(bytes);
      return { buf, x };
    });
    for (const { buf, x } of bufs) {
      if (!x) continue;
      const h = host.alloc(bytes);
      new Uint8Array(h.sab, 0, bytes).set(new Uint8Array(x.buffer, x.byteOffset, bytes));
      await done((cb) => dev.upload(h, buf, bytes, cb));
    }
    const [pa, pb, pc] = bufs.map((x) => x.buf.ptr) as [number, number, number];
    const req = {
      dtype,
      precision,
      transA: false,
      transB: false,
      m: n,
      n,
      k: n,
      alpha: 1,
      beta: 0,
      a: pa,
      b: pb,
      c: pc,
    };
    dev.launcher.gemm(req, dev.context.streams.compute);
    await dev.sync();
    t0 = performance.now();
    for (let r = 0; r < reps; r++) dev.launcher.gemm(req, dev.context.streams.compute);
    await dev.sync();
    const directS = (performance.now() - t0) / 1000;
    for (const { buf } of bufs) dev.node.free(buf);

    const total = 2 * n ** 3 * reps;
    const tandemFlops = total / tandemS;
    const directFlops = total / directS;
    return {
      n,
      dtype,
      precision,
      device: dev.info.name,
      tandemFlops,
      directFlops,
      ratio: tandemFlops / directFlops,
      reps,
      check,
    };
  } finally {
    await rt.close();
  }
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    device: { type: 'string' },
    n: { type: 'string' },
    dtype: { type: 'string' },
    precision: { type: 'string' },
    reps: { type: 'string' },
  });
  const n = intOption(values['n'], 'n', 8192, 16, 32768);
  const dtype = assertDType(values['dtype'] ?? 'bf16');
  if (dtype === 'i32' || dtype === 'u8')
    throw new TandemError('TANDEM_ERR_DTYPE', 'CUDA GEMM takes f32, f64, f16 or bf16');
  const precision = values['precision'] ?? 'default';
  if (precision !== 'default' && precision !== 'tf32') {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `--precision must be default or tf32, got ${String(precision)}`,
    );
  }
  const reps = intOption(values['reps'], 'reps', 20, 1, 10000);
  const r = await cudaGemmBench(n, dtype, precision, reps);
  print(!!values['json'], r, () =>
    [
      table([
        ['GEMM', 'TANDEM (rt.submit)', 'CUBLAS DIRECT', 'RATIO'],
        [
          `${dtype}${precision === 'tf32' ? ' (tf32)' : ''} n=${n}`,
          flops(r.tandemFlops),
          flops(r.directFlops),
          `${r.ratio.toFixed(3)}x`,
        ],
      ]),
      `${r.device}; ${reps} back-to-back runs each, wall clock to completion; check: max relative error ${r.check.maxRelError.toExponential(2)} ${r.check.ok ? 'OK' : 'FAILED'}`,
    ].join('\n'),
  );
  return r.check.ok ? 0 : 1;
}

if (process.argv[1]?.endsWith('cuda-gemm.js')) {
  process.exitCode = await main(process.argv.slice(2)).catch((e: unknown) =>
    reportError(e, process.argv.includes('--json')),
  );
}
