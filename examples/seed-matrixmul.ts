/**
 * The seed document's own CUDA kernel, unchanged, registered as a custom Tandem kernel and submitted
 * like any other task; its result is checked against Tandem's gemm (cuBLAS) on the same inputs.
 *
 *   npx tsc -p . && node dist/examples/seed-matrixmul.js
 */
import { pathToFileURL } from 'node:url';
import { TandemError, type CudaProgram, type KernelDef } from 'tandem';

/** Verbatim from the seed document (section 二.2): C[M,K] = A[M,N] · B[N,K], one thread per element. */
export const SEED_MATRIXMUL_SOURCE = `__global__ void matrixMul(float *A, float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < K) {
        float sum = 0.0;
        for (int i = 0; i < N; i++) {
            sum += A[row * N + i] * B[i * K + col];
        }
        C[row * K + col] = sum;
    }
}`;

const TILE = 16;

/** The CUDA implementation: the source as is, its launch geometry, and its parameters from the shapes. */
export const SEED_MATRIXMUL: CudaProgram = {
  kind: 'program',
  source: SEED_MATRIXMUL_SOURCE,
  entry: 'matrixMul',
  prelude: false,
  grid: (args) => [Math.ceil(args[1]!.desc.shape[1]! / TILE), Math.ceil(args[0]!.desc.shape[0]! / TILE), 1],
  block: () => [TILE, TILE, 1],
  params: (args) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'ptr', arg: 2 },
    { kind: 'i32', value: args[0]!.desc.shape[0]! },
    { kind: 'i32', value: args[0]!.desc.shape[1]! },
    { kind: 'i32', value: args[1]!.desc.shape[1]! },
  ],
};

export const SEED_MATRIXMUL_DEF: KernelDef = {
  name: 'seed.matrixMul',
  args: [
    { name: 'A', mode: 'r' },
    { name: 'B', mode: 'r' },
    { name: 'C', mode: 'w' },
  ],
  validate(args) {
    const [a, b, c] = [args['A'], args['B'], args['C']];
    if (!a || !b || !c)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'seed.matrixMul takes A, B and C');
    const ok =
      a.shape.length === 2 &&
      b.shape.length === 2 &&
      c.shape.length === 2 &&
      a.shape[1] === b.shape[0] &&
      c.shape[0] === a.shape[0] &&
      c.shape[1] === b.shape[1];
    if (!ok) throw new TandemError('TANDEM_ERR_SHAPE', 'seed.matrixMul needs A [M,N], B [N,K], C [M,K]');
    if ([a, b, c].some((t) => t.dtype !== 'f32'))
      throw new TandemError('TANDEM_ERR_DTYPE', 'seed.matrixMul is f32 only');
  },
  cost(args) {
    const [m, n] = args['A']!.shape as [number, number];
    const k = args['B']!.shape[1]!;
    return { flops: 2 * m * n * k, bytes: 4 * (m * n + n * k + m * k) };
  },
};

async function main(): Promise<void> {
  const { Runtime } = await import('../src/runtime/runtime.js');
  const rt = await Runtime.create({ backends: ['cpu', 'cuda'], calibrate: false });
  const cuda = rt.backends.find((b) => b.kind === 'cuda');
  if (!cuda?.available) {
    console.log(`CUDA unavailable: ${cuda?.reason ?? 'not configured'}`);
    await rt.close();
    return;
  }
  rt.registerKernel(SEED_MATRIXMUL_DEF, { cuda: SEED_MATRIXMUL });
  const [M, N, K] = [300, 200, 100];
  const rand = (n: number): Float32Array =>
    Float32Array.from({ length: n }, () => Math.random() * 2 - 1 || 0.5);
  const A = rt.tensor([M, N], 'f32', rand(M * N));
  const B = rt.tensor([N, K], 'f32', rand(N * K));
  const C1 = rt.tensor([M, K], 'f32');
  const C2 = rt.tensor([M, K], 'f32');
  await rt.submit({ kernel: 'seed.matrixMul', args: { A, B, C: C1 }, device: 'cuda' }).done;
  await rt.submit({
    kernel: 'gemm',
    args: { a: A, b: B, c: C2 },
    scalars: { alpha: 1, beta: 0 },
    device: 'cuda',
  }).done;
  const [x, y] = [(await rt.read(C1)) as Float32Array, (await rt.read(C2)) as Float32Array];
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!) / (1 + Math.abs(y[i]!)));
  console.log(
    `seed matrixMul ${M}x${N}x${K} on ${cuda.devices[0]!.info.name}: max relative difference vs gemm ${worst.toExponential(2)}`,
  );
  await rt.close();
  if (worst > 1e-4)
    throw new TandemError('TANDEM_ERR_INTERNAL', `seed matrixMul disagrees with gemm (${worst})`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
