/**
 * cuBLASLt autotuning: for a large GEMM shape, cuBLASLt's heuristic returns several candidate
 * algorithms; the first is a guess from a model of the GPU, not a measurement. The tuner times each
 * candidate on the GPU once per shape (as `torch.backends.cudnn.benchmark` does for convolutions and
 * cuBLASLt's own autotuning sample does for GEMMs) and keeps the fastest.
 *
 * Timing runs the real matmul on the caller's buffers, so it is only done where running it several
 * times leaves the same result as running it once (`tunable`): beta = 0 and an output that overlaps
 * none of the inputs. It blocks the host until the GPU has run the candidates (once per shape: a few
 * ms for GPT-2's layers at 65k rows), and never while a stream is being captured into a CUDA graph (a
 * capture cannot be waited on; the heuristic's first choice is used there and the shape is tuned on its
 * next eager call).
 *
 * TANDEM_LT_AUTOTUNE: 1 on, 0 off (default on); shapes under TUNE_MIN_FLOP are never tuned (their
 * timing would cost more than it could ever save).
 */
import type { CudaDriver } from './ffi/driver.js';

/** 2·m·n·k·batch below which a shape keeps the heuristic's choice (~30 µs of bf16 work on an H100). */
export const TUNE_MIN_FLOP = 2 ** 34;
/** A candidate replaces the heuristic's first choice only when this much faster (timing noise). */
const MARGIN = 0.98;
/** Timed runs per candidate (after one untimed warm-up run). */
const RUNS = 3;

export function autotuneEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['TANDEM_LT_AUTOTUNE'] !== '0';
}

/** A device range [ptr, ptr + bytes). */
export interface Span {
  readonly ptr: number;
  readonly bytes: number;
}

/**
 * Whether a matmul may be run several times for timing without changing what it leaves behind: no
 * accumulation into the output and no overlap between the output and what it reads.
 */
export function tunable(beta: number, output: Span, inputs: readonly Span[]): boolean {
  if (beta !== 0) return false;
  const end = output.ptr + output.bytes;
  return inputs.every((s) => s.ptr === 0 || s.bytes === 0 || s.ptr + s.bytes <= output.ptr || s.ptr >= end);
}

/** Runs one matmul with an algorithm on the tuning stream; returns cuBLAS's status (0: enqueued). */
export type AlgoRun = (algo: Uint8Array) => number;

export interface TuneResult {
  /** Index of the chosen candidate. */
  readonly chosen: number;
  /** Milliseconds per run of each candidate (NaN: cuBLASLt refused to run it). */
  readonly ms: readonly number[];
}

/**
 * The index of the fastest time (NaN: a candidate that did not run); the first entry, the heuristic's
 * choice, is kept unless another is faster by more than the timing noise (MARGIN).
 */
export function pickFastest(ms: readonly number[]): number {
  let chosen = 0;
  for (let i = 1; i < ms.length; i++) {
    const best = ms[chosen]!;
    if (ms[i]! < (Number.isNaN(best) ? Infinity : best * MARGIN)) chosen = i;
  }
  return chosen;
}

/**
 * Times every candidate on `stream` (one warm-up, then RUNS runs between two events) and returns the
 * fastest; the first candidate (the heuristic's) wins ties within MARGIN. Blocks until the GPU is done.
 */
export function fastestAlgo(
  driver: CudaDriver,
  stream: number,
  candidates: readonly Uint8Array[],
  run: AlgoRun,
): TuneResult {
  const api = driver.api;
  const start = driver.out1('cuEventCreate', (o) => api.cuEventCreate(o, 0));
  let end = 0;
  try {
    end = driver.out1('cuEventCreate', (o) => api.cuEventCreate(o, 0));
    const ms: number[] = [];
    for (const algo of candidates) {
      if (run(algo) !== 0) {
        ms.push(Number.NaN);
        continue;
      }
      driver.check(api.cuEventRecord(start, stream), 'cuEventRecord');
      let ok = true;
      for (let r = 0; r < RUNS && ok; r++) ok = run(algo) === 0;
      driver.check(api.cuEventRecord(end, stream), 'cuEventRecord');
      driver.check(api.cuEventSynchronize(end), 'cuEventSynchronize');
      const elapsed = driver.out1('cuEventElapsedTime_v2', (o) => api.cuEventElapsedTime_v2(o, start, end));
      ms.push(ok ? elapsed / RUNS : Number.NaN);
    }
    return { chosen: pickFastest(ms), ms };
  } finally {
    api.cuEventDestroy_v2(start);
    if (end !== 0) api.cuEventDestroy_v2(end);
  }
}
