/**
 * Per-call timing of back-to-back GPU work through the runtime, for benches set beside PyTorch's
 * CUDA-event windows (bench/nn-linear.ts, bench/nn-attention.ts).
 */

/** Timed windows per figure (the median is reported). */
export const WINDOWS = 3;

/**
 * Seconds per call, given `wall(units)`: the ms `units` back-to-back units of `callsPerUnit` calls take
 * to complete. The wall of two units less that of one, over callsPerUnit: the host's fixed latencies
 * (the first launch, the notice that the last call completed) are in both and cancel, as they are
 * outside PyTorch's CUDA events. The median of WINDOWS, after `warm` units. What does not cancel is the
 * notice's jitter: once the GPU has run a few ms without news the completion poller polls from a 1 ms
 * timer, so a wall is up to ~1 ms long — 0.05 ms a call over 20 calls, which moved GPT-2's qkv passes
 * by ±10 % from one process to the next (bench/RESULTS.md, the twenty-fifth session): units need a few
 * hundred ms of GPU work.
 */
export async function perCall(
  wall: (units: number) => Promise<number>,
  callsPerUnit: number,
  warm: number,
): Promise<number> {
  for (let i = 0; i < warm; i++) await wall(1);
  const seconds: number[] = [];
  for (let w = 0; w < WINDOWS; w++) {
    const one = await wall(1);
    const two = await wall(2);
    seconds.push((two - one) / 1e3 / callsPerUnit);
  }
  return seconds.sort((x, y) => x - y)[Math.floor(WINDOWS / 2)]!;
}
