/** Slice past the device kernels' rank 6, on a lower-rank view where the slice allows it. */
import { MAX_RANK } from '../../kernels/onnx/shapes.js';
import { fail, inp } from './util.js';
import type { LowerTarget, OpCall } from './types.js';

const list = (xs: readonly number[]): string => xs.join(',');

/**
 * A slice past the kernels' rank 6: an axis sliced with step 1 absorbs the whole axes after it (its
 * range scales by their size), so the slice runs on a view of lower rank; still past 6, unsupported.
 */
export function lowerWideSlice(
  c: OpCall,
  t: LowerTarget,
  ranges: ReadonlyArray<[number, number, number]>,
): void {
  const dims = inp(c, 0).dims;
  const view: number[] = [];
  const cut: Array<[number, number, number]> = [];
  const whole = (k: number) => ranges[k]![0] === 0 && ranges[k]![1] === 1 && ranges[k]![2] === dims[k];
  for (let a = 0; a < dims.length;) {
    let [start, count, size] = [ranges[a]![0], ranges[a]![2], dims[a]!];
    const step = ranges[a]![1];
    let b = a + 1;
    if (step === 1)
      for (; b < dims.length && whole(b); b++)
        [start, count, size] = [start * dims[b]!, count * dims[b]!, size * dims[b]!];
    view.push(size);
    cut.push([start, step, count]);
    a = b;
  }
  if (view.length > MAX_RANK)
    throw fail(
      c,
      `rank ${dims.length} on device data is not supported (at most ${MAX_RANK})`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  const x = t.scratch(view, t.input(0));
  t.submit('copy', { x: t.input(0), y: x });
  const y = t.scratch(
    cut.map((r) => r[2]),
    x,
  );
  // A backward slice ending before index 0 is written as a very negative end (ONNX clamps it to −1).
  const end = (r: [number, number, number]) =>
    r[1] < 0 && r[0] + r[1] * r[2] < 0 ? -(2 ** 31) : r[0] + r[1] * r[2];
  t.submit(
    'onnx_slice',
    { x, y },
    {
      starts: list(cut.map((r) => r[0])),
      ends: list(cut.map(end)),
      axes: list(cut.map((_, i) => i)),
      steps: list(cut.map((r) => r[1])),
    },
  );
  t.submit('copy', { x: y, y: t.output(0) });
}
