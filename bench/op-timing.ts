/**
 * One runtime op timed at a layer's shapes, for the kernel benches (conv.ts, onnx-kernels.ts): random
 * inputs, a first run that moves the data and compiles the programs, then five rounds of `reps` runs in
 * flight at once; the median round's time per run, in ms.
 */
import type { DType } from '../src/core/dtype.js';
import { fillRandom } from '../src/core/seeded-random.js';
import { numel } from '../src/core/shape.js';
import type { Scalars } from '../src/devices/device.js';
import type { Tensor } from '../src/memory/tensor.js';
import type { Runtime } from '../src/runtime/runtime.js';

export interface OpCall {
  readonly layer: string;
  readonly op: string;
  readonly args: Record<string, readonly number[]>;
  readonly scalars: Scalars;
}

export async function timeOp(
  rt: Runtime,
  call: OpCall,
  dtype: DType,
  device: string,
  reps: number,
): Promise<number> {
  const tensors: Record<string, Tensor> = {};
  let seed = 1;
  for (const [name, shape] of Object.entries(call.args))
    tensors[name] = rt.tensor(shape, dtype, fillRandom(new Float32Array(numel(shape)), seed++));
  const run = (): Promise<void> =>
    rt.submit({ kernel: call.op, args: tensors, scalars: call.scalars, device }).done;
  await run(); // brings the data to the device, compiles the programs
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    const tasks: Promise<void>[] = [];
    for (let i = 0; i < reps; i++) tasks.push(run());
    await Promise.all(tasks);
    runs.push((performance.now() - t0) / reps);
  }
  for (const t of Object.values(tensors)) rt.free(t);
  return runs.sort((a, b) => a - b)[2]!;
}
