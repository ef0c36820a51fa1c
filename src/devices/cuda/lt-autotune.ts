/**
 * cuBLASLt autotuning: for a large GEMM shape, cuBLASLt's heuristic returns several candidate
 * algorithms; the first is a guess from a model of the GPU, not a measurement. The tuner times each
 * candidate on the GPU once per shape (as `torch.backends.cudnn.benchmark` does for convolutions and
 * cuBLASLt's own autotuning sample does for GEMMs) and keeps the fastest.
 *
 * Timing runs the real matmul on the caller's buffers, so it is only done where running it several
 * times leaves the same result as running it once (`tunable`): beta = 0 and an output that overlaps
 * none of the inputs. It blocks the host until the GPU has run the candidates (once per shape: some
 * 40 ms for a GPT-2 layer at 65k rows, warm-up included), and never while a stream is being captured into a CUDA graph (a
 * capture cannot be waited on; the heuristic's first choice is used there and the shape is tuned on its
 * next eager call).
 *
 * TANDEM_LT_AUTOTUNE: 1 on, 0 off (default on); shapes under TUNE_MIN_FLOP are never tuned (their
 * timing would cost more than it could ever save). With autotuning on, large plain f16/bf16 gemms go
 * through cuBLASLt too (matmul.ts, ltTakesGemm), so they are tuned as the epilogue matmuls are.
 */
import type { CudaDriver } from './ffi/driver.js';

/** 2·m·n·k·batch below which a shape keeps the heuristic's choice (~30 µs of bf16 work on an H100). */
export const TUNE_MIN_FLOP = 2 ** 34;
/** A candidate replaces the heuristic's first choice only when this much faster (timing noise). */
const MARGIN = 0.98;
/** Timed runs per candidate and round (after one untimed run). */
const RUNS = 3;
/** Rounds over all candidates; each candidate's time is its fastest round. */
const ROUNDS = 2;
/**
 * GPU time (ms) the heuristic's choice runs before anything is timed, at most WARM_RUNS runs: an idle
 * GPU clocks down (an H200 idles at 345 MHz), and the first candidate timed on a GPU still raising its
 * clocks looked slower than it is (the tuner moved GPT-2's qkv forward off PyTorch's own kernel, 326 µs
 * alone, to one of 340 µs).
 */
const WARM_MS = 20;
const WARM_RUNS = 64;

/**
 * A candidate that beat the first (the heuristic's choice, or the caller's alternative: cublasGemmEx for
 * a plain gemm) is timed against it again, head to head, before it replaces it: CONFIRM_ROUNDS alternating rounds of at least CONFIRM_MS of runs each. With eight
 * candidates each timed for ~1 ms, one of them can look 2 % faster by chance (a winner's curse); on an
 * H100 the tuner moved GPT-2's fc dX to a kernel that ran 0.470 ms in the Linear bench against 0.431
 * for cublasGemmEx's choice (bench/RESULTS.md, the twenty-fourth session). TANDEM_LT_CONFIRM=0: no
 * confirmation (A/B runs).
 */
const CONFIRM_MS = 5;
const CONFIRM_ROUNDS = 3;
const CONFIRM = process.env['TANDEM_LT_CONFIRM'] !== '0';

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
  /**
   * The head-to-head rerun of the first and the fastest other candidate (ms per run, in
   * that order), where one was run; `chosen` is the other only if it stayed faster by the margin.
   */
  readonly confirm?: readonly [number, number];
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
 * Times every candidate on `stream` and returns the fastest: the heuristic's choice runs first until the
 * GPU has had WARM_MS of work, then ROUNDS rounds time each candidate (one untimed run, then RUNS runs
 * between two events); a candidate's time is its best round, and the first candidate (the heuristic's,
 * or the caller's alternative) wins ties within MARGIN; another candidate that wins must win again head to head (CONFIRM_MS).
 * Blocks until the GPU is done.
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
    /** ms per run of `runs` runs of `algo` (NaN when cuBLASLt refused one). */
    const timeRuns = (algo: Uint8Array, runs: number): number => {
      driver.check(api.cuEventRecord(start, stream), 'cuEventRecord');
      let ok = true;
      for (let r = 0; r < runs && ok; r++) ok = run(algo) === 0;
      driver.check(api.cuEventRecord(end, stream), 'cuEventRecord');
      driver.check(api.cuEventSynchronize(end), 'cuEventSynchronize');
      const ms = driver.out1('cuEventElapsedTime_v2', (o) => api.cuEventElapsedTime_v2(o, start, end));
      return ok ? ms / runs : Number.NaN;
    };
    const first = timeRuns(candidates[0]!, 1);
    if (Number.isFinite(first) && first > 0)
      timeRuns(candidates[0]!, Math.min(WARM_RUNS, Math.ceil(WARM_MS / first)));
    const ms = candidates.map(() => Number.NaN);
    for (let round = 0; round < ROUNDS; round++)
      candidates.forEach((algo, i) => {
        if (round > 0 && Number.isNaN(ms[i]!)) return; // refused in the first round
        // A candidate cuBLASLt refuses to run (in any round) is never chosen.
        const t = run(algo) === 0 ? timeRuns(algo, RUNS) : Number.NaN;
        if (Number.isNaN(t) || round === 0 || t < ms[i]!) ms[i] = t;
      });
    const best = pickFastest(ms);
    if (best === 0 || !CONFIRM || !Number.isFinite(ms[0]!)) return { chosen: best, ms };
    const runs = Math.min(WARM_RUNS, Math.max(RUNS, Math.ceil(CONFIRM_MS / ms[0]!)));
    let heuristic = Infinity;
    let other = Infinity;
    for (let round = 0; round < CONFIRM_ROUNDS; round++) {
      heuristic = Math.min(heuristic, timeRuns(candidates[0]!, runs));
      other = Math.min(other, timeRuns(candidates[best]!, runs));
    }
    const chosen = other < heuristic * MARGIN ? best : 0;
    return { chosen, ms, confirm: [heuristic, other] };
  } finally {
    api.cuEventDestroy_v2(start);
    if (end !== 0) api.cuEventDestroy_v2(end);
  }
}
