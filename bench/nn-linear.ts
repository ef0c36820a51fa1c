/**
 * B.1 (research/anchors-dl.md): fused linear epilogues on CUDA in bf16, through rt.submit with the data
 * resident on the GPU. GPT-2 shapes with M = B·T rows: (K, N) = (768, 2304) bias, (768, 3072) bias +
 * GELU, (3072, 768) bias (its dX takes the DGELU of the GELU before it), (768, 50304) no bias.
 * Per shape: forward, backward dX and backward dW (+ db), each timed per call (the wall clock of 2·reps
 * back-to-back submits less that of reps, median of 3; --mode sequence: as one prepared sequence) as
 * TFLOP/s of the 2·M·N·K product; then accuracy at --check-m rows: the
 * normwise max error max|got − ref| / max|ref| over --check-rows rows against a float64 reference
 * computed from the same bf16 inputs. One JSON line per (shape, pass).
 *
 *   npm run build && node dist/bench/nn-linear.js [--m 65536] [--reps 200] [--check-m 256] [--check-rows 16]
 *       [--shapes qkv,fc] [--mode task|sequence]
 *   python3 bench/torch/nn_linear.py [--m 65536] [--reps 200]      (the PyTorch side, same lines)
 *
 * Inputs are random bf16 words made directly (no float64 detour, so 400 MB tensors take a fraction of
 * a second); inputs over 1 GiB (only dy of the 50304-wide head at M = 65536) are filled on the device
 * with a constant instead, which the lines mark with "dy_constant". Accuracy is always checked at
 * --check-m rows with random data.
 */
import { type DType, toNumbers } from '../src/core/dtype.js';
import { TandemError } from '../src/core/errors.js';
import { intOption, parse } from '../src/cli/output.js';
import type { Scalars } from '../src/devices/device.js';
import { gelu, geluGrad } from '../src/kernels/activation/ops.js';
import type { CudaDevice } from '../src/devices/cuda/cuda-device.js';
import { Runtime } from '../src/runtime/runtime.js';
import { perCall } from './per-call.js';

type Tensor = ReturnType<Runtime['tensor']>;
type Pass = 'forward' | 'backward_dx' | 'backward_dw';

interface Shape {
  readonly name: string;
  readonly k: number;
  readonly n: number;
  readonly gelu: boolean;
  readonly bias: boolean;
  /** Its input came through a GELU: dX takes the DGELU epilogue with that GELU's pre-activation. */
  readonly dxGelu: boolean;
}

const SHAPES: readonly Shape[] = [
  { name: 'attn_qkv', k: 768, n: 2304, gelu: false, bias: true, dxGelu: false },
  { name: 'mlp_fc_gelu', k: 768, n: 3072, gelu: true, bias: true, dxGelu: false },
  { name: 'mlp_proj', k: 3072, n: 768, gelu: false, bias: true, dxGelu: true },
  { name: 'lm_head', k: 768, n: 50304, gelu: false, bias: false, dxGelu: false },
];

const DTYPE: DType = 'bf16';
const BIG = 2 ** 30;

/**
 * Random bf16 words: sign, exponent 2^-7 .. 2^-1 and mantissa from a xorshift32 stream, i.e. values
 * of magnitude in [2^-7, 1) (never zero), as `randomData` draws them but without float64 temporaries.
 */
function randomBf16(count: number, seed: number): Uint16Array {
  const out = new Uint16Array(count);
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const exponent = 120 + (state % 7); // 2^-7 .. 2^-1
    out[i] = ((state >>> 31) << 15) | (exponent << 7) | ((state >>> 8) & 0x7f);
  }
  return out;
}

interface Call {
  readonly kernel: string;
  readonly args: Record<string, Tensor>;
  readonly scalars: Scalars;
}

/** The op each pass submits, over tensors of m rows. */
interface Setup extends Record<Pass, Call> {
  /**
   * The same passes writing a second set of outputs. Timed calls alternate between the two, as
   * PyTorch's loop writes each result to a fresh tensor, so no call waits on the one before it for
   * its output (the default policy forwards such chains anyway: on an H100 qkv's forward timed 0.354
   * ms alternating and 0.359 ms into one output, bench/RESULTS.md, the twenty-fourth session).
   */
  readonly into2: Record<Pass, Call>;
  readonly fills: Promise<void>[];
  readonly inputs: Record<string, Tensor>;
  /** The second set's tensors (freed with the inputs). */
  readonly extra: readonly Tensor[];
}

function calls(rt: Runtime, s: Shape, m: number, seed: number): Setup {
  const make = (shape: number[], salt: number): Tensor => {
    const count = shape.reduce((p, d) => p * d, 1);
    if (count * 2 > BIG) {
      const t = rt.tensor(shape, DTYPE);
      fills.push(
        rt.submit({ kernel: 'fill', args: { y: t }, scalars: { value: 0.01 }, device: 'cuda' }).done,
      );
      return t;
    }
    return rt.tensor(shape, DTYPE, randomWords(count, seed * 16 + salt));
  };
  const fills: Promise<void>[] = [];
  const x = make([m, s.k], 1);
  const w = make([s.n, s.k], 2);
  const bias = make([s.n], 3);
  const dy = make([m, s.n], 4);
  const pre = s.dxGelu ? make([m, s.k], 5) : x;
  const outputs = (): Record<'y' | 'yPre' | 'dx' | 'dw' | 'db', Tensor> => ({
    y: rt.tensor([m, s.n], DTYPE),
    yPre: rt.tensor([m, s.n], DTYPE),
    dx: rt.tensor([m, s.k], DTYPE),
    dw: rt.tensor([s.n, s.k], DTYPE),
    db: rt.tensor([s.n], DTYPE),
  });
  const passesInto = ({ y, yPre, dx, dw, db }: ReturnType<typeof outputs>): Record<Pass, Call> => ({
    forward: s.gelu
      ? { kernel: 'linear_act', args: { x, w, b: bias, pre: yPre, y }, scalars: { act: 'gelu' } }
      : s.bias
        ? { kernel: 'linear', args: { x, w, b: bias, y }, scalars: {} }
        : { kernel: 'gemm', args: { a: x, b: w, c: y }, scalars: { transB: true } },
    backward_dx: s.dxGelu
      ? { kernel: 'linear_dx_act', args: { dy, w, pre, dx }, scalars: { act: 'gelu' } }
      : { kernel: 'gemm', args: { a: dy, b: w, c: dx }, scalars: {} },
    backward_dw: s.bias
      ? { kernel: 'linear_dw', args: { dy, x, dw, db }, scalars: {} }
      : { kernel: 'gemm', args: { a: dy, b: x, c: dw }, scalars: { transA: true } },
  });
  const first = outputs();
  const second = outputs();
  return {
    ...passesInto(first),
    into2: passesInto(second),
    fills,
    inputs: { x, w, bias, dy, pre, ...first },
    extra: Object.values(second),
  };
}

/** 'cuda' (the benchmark); 'cpu' only to smoke-test this script on a machine without a GPU. */
let deviceKind: 'cuda' | 'cpu' = 'cuda';

const submit = (rt: Runtime, c: Call): Promise<void> =>
  rt.submit({ kernel: c.kernel, args: c.args, scalars: c.scalars, device: deviceKind }).done;

let pool: Uint16Array = new Uint16Array(0);

/**
 * `count` random bf16 words: a window of one shared random pool (grown once to the largest tensor
 * plus slack), at an offset that depends on `salt`, so big inputs cost no generation each.
 */
function randomWords(count: number, salt: number): Uint16Array {
  const slack = 1 << 20;
  if (pool.length < count + slack) pool = randomBf16(count + slack, 99);
  const offset = (salt * 7919) % slack;
  return pool.subarray(offset, offset + count);
}

/** ms from `t0` until every promise of `runs` has settled. */
async function since(runs: Promise<void>[], t0: number): Promise<number> {
  await Promise.all(runs);
  return performance.now() - t0;
}

/**
 * Seconds per call of `reps` back-to-back submits (data already resident), after `reps` untimed ones:
 * an idle GPU clocks down (an H200 idles at 345 MHz) while the host fills the next shape's inputs, and a
 * single warm-up call left the first timed pass of a process 15-40 % slow (GPT-2's qkv forward timed
 * 0.39-0.46 ms whose kernel alone takes 0.326 ms). nn_linear.py warms PyTorch the same way.
 */
function time(rt: Runtime, c: readonly [Call, Call], reps: number): Promise<number> {
  const wall = (units: number): Promise<number> => {
    const t0 = performance.now();
    return since(
      Array.from({ length: units * reps }, (_, i) => submit(rt, c[i % 2]!)),
      t0,
    );
  };
  return perCall(wall, reps, 1);
}

/**
 * Seconds per call with the calls as the steps of one prepared sequence (`reps` steps alternating the
 * two output sets), the way a recorded training step runs its kernels: one task, one completion event,
 * replayed from a CUDA graph once its steps come again at the same addresses. Three warm-up runs.
 */
function timeSequence(rt: Runtime, c: readonly [Call, Call], reps: number): Promise<number> {
  const steps = Array.from({ length: reps }, (_, i) => {
    const call = c[i % 2]!;
    return { kernel: call.kernel, args: call.args, scalars: call.scalars };
  });
  const prepared = rt.prepareSequence({ steps, device: deviceKind, name: 'nn-linear' });
  const wall = (units: number): Promise<number> => {
    const t0 = performance.now();
    return since(
      Array.from({ length: units }, () => rt.submitPrepared(prepared).done),
      t0,
    );
  };
  return perCall(wall, reps, 3);
}

/** max |got − ref| / max |ref| over the entries `ref` gives (index → value). */
function normwise(got: Float64Array, ref: Map<number, number>): number {
  let err = 0;
  let scale = 0;
  for (const [i, v] of ref) {
    err = Math.max(err, Math.abs(got[i]! - v));
    scale = Math.max(scale, Math.abs(v));
  }
  return err / scale;
}

/** Float64 references of the checked entries of each pass (first `rows` rows of the output). */
async function accuracy(
  rt: Runtime,
  s: Shape,
  m: number,
  rows: number,
  seed: number,
): Promise<Record<Pass, number>> {
  const c = calls(rt, s, m, seed);
  await Promise.all(c.fills);
  const read = async (t: Tensor): Promise<Float64Array> => toNumbers(DTYPE, await rt.read(t));
  const [x, w, bias, dy, pre] = await Promise.all(
    ['x', 'w', 'bias', 'dy', 'pre'].map((n) => read(c.inputs[n]!)),
  );
  const { k, n } = s;
  const out: Partial<Record<Pass, number>> = {};
  await submit(rt, c.forward);
  const fwd = new Map<number, number>();
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < n; j++) {
      let acc = s.bias ? bias![j]! : 0;
      for (let q = 0; q < k; q++) acc += x![i * k + q]! * w![j * k + q]!;
      fwd.set(i * n + j, s.gelu ? gelu(acc) : acc);
    }
  out.forward = normwise(await read(c.inputs.y!), fwd);
  await submit(rt, c.backward_dx);
  const bdx = new Map<number, number>();
  for (let i = 0; i < rows; i++)
    for (let q = 0; q < k; q++) {
      let acc = 0;
      for (let j = 0; j < n; j++) acc += dy![i * n + j]! * w![j * k + q]!;
      bdx.set(i * k + q, s.dxGelu ? geluGrad(pre![i * k + q]!) * acc : acc);
    }
  out.backward_dx = normwise(await read(c.inputs.dx!), bdx);
  await submit(rt, c.backward_dw);
  const bdw = new Map<number, number>();
  for (let j = 0; j < rows; j++)
    for (let q = 0; q < k; q++) {
      let acc = 0;
      for (let i = 0; i < m; i++) acc += dy![i * n + j]! * x![i * k + q]!;
      bdw.set(j * k + q, acc);
    }
  out.backward_dw = normwise(await read(c.inputs.dw!), bdw);
  if (s.bias) {
    const bdb = new Map<number, number>();
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let i = 0; i < m; i++) acc += dy![i * n + j]!;
      bdb.set(j, acc);
    }
    out.backward_dw = Math.max(out.backward_dw, normwise(await read(c.inputs.db!), bdb));
  }
  for (const t of new Set([...Object.values(c.inputs), ...c.extra])) rt.free(t);
  return out as Record<Pass, number>;
}

async function main(argv: string[]): Promise<void> {
  const { values } = parse(argv, {
    m: { type: 'string' },
    reps: { type: 'string' },
    'check-m': { type: 'string' },
    'check-rows': { type: 'string' },
    shapes: { type: 'string' },
    device: { type: 'string' },
    mode: { type: 'string' },
  });
  // --mode sequence: each pass's calls as one prepared sequence (replayed as a CUDA graph), not tasks.
  const mode = values['mode'] ?? 'task';
  if (mode !== 'task' && mode !== 'sequence')
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--mode must be task or sequence, got ${mode}`);
  if (values['device'] === 'cpu') deviceKind = 'cpu';
  const m = intOption(values['m'], 'm', 65536, 1, 1 << 20);
  const reps = intOption(values['reps'], 'reps', 200, 1, 10000);
  const checkM = intOption(values['check-m'], 'check-m', 256, 1, 1 << 16);
  const checkRows = Math.min(checkM, intOption(values['check-rows'], 'check-rows', 16, 1, 1 << 16));
  // No calibration: plain gemm passes use cublasGemmEx, the fused ones cuBLASLt (ctx.matmul).
  const rt = await Runtime.create({ backends: [deviceKind], calibrate: false, log: () => undefined });
  try {
    const dev = rt.devices.find((d) => d.info.kind === deviceKind);
    if (!dev) {
      const why = rt.backends.find((b) => b.kind === deviceKind)?.reason ?? 'no CUDA device';
      throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', `CUDA is not available: ${why}`);
    }
    // --shapes qkv,fc: only the shapes whose names contain one of the words (profiler runs).
    const only = (values['shapes'] as string | undefined)?.split(',').filter((w) => w !== '');
    for (const s of SHAPES.filter((x) => !only || only.some((w) => x.name.includes(w)))) {
      const errors = await accuracy(rt, s, checkM, checkRows, 7);
      const c = calls(rt, s, m, 11);
      await Promise.all(c.fills);
      for (const pass of ['forward', 'backward_dx', 'backward_dw'] as const) {
        const lt = (dev as Partial<CudaDevice>).context?.cublasLt;
        const counts = lt?.epilogueCalls;
        const before = { ...(counts ?? { fused: 0, declined: 0 }) };
        const tunedBefore = lt?.tuned.length ?? 0;
        const pair = [c[pass], c.into2[pass]] as const;
        const seconds = await (mode === 'sequence' ? timeSequence(rt, pair, reps) : time(rt, pair, reps));
        console.log(
          JSON.stringify({
            bench: 'B.1',
            side: 'tandem',
            device: dev.info.name,
            shape: s.name,
            m,
            k: s.k,
            n: s.n,
            pass,
            op: c[pass].kernel,
            epilogue:
              pass === 'forward'
                ? s.gelu
                  ? 'gelu'
                  : s.bias
                    ? 'bias'
                    : 'none'
                : pass === 'backward_dx'
                  ? s.dxGelu
                    ? 'dgelu'
                    : 'none'
                  : s.bias
                    ? 'bgradb'
                    : 'none',
            ms: +(seconds * 1e3).toFixed(4),
            tflops: +((2 * m * s.n * s.k) / seconds / 1e12).toFixed(2),
            max_rel_err: +errors[pass].toExponential(3),
            check_m: checkM,
            // cuBLASLt matmuls with an epilogue that ran fused / that cuBLASLt declined (then the
            // gemm + program fallback ran) during the timed calls; null without cuBLASLt.
            lt_fused: counts ? counts.fused - before.fused : null,
            lt_declined: counts ? counts.declined - before.declined : null,
            // Shapes cuBLASLt autotuning has timed so far, and those moved off the heuristic's choice.
            lt_tuned: lt?.tuning ?? null,
            // The shapes this pass tuned (cuBLASLt's column-major m, n, k): every candidate's ms per run.
            lt_candidates: lt?.tuned.slice(tunedBefore) ?? null,
            reps,
            mode,
            dy_constant: pass !== 'forward' && m * s.n * 2 > BIG,
          }),
        );
      }
      for (const t of new Set([...Object.values(c.inputs), ...c.extra])) rt.free(t);
    }
  } finally {
    await rt.close();
  }
}

await main(process.argv.slice(2));
