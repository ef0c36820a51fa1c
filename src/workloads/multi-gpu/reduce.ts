/**
 * Data-parallel reductions across GPUs through rt.submit. Each GPU holds a partial of the same shape
 * (per-GPU gradients, per-shard results); they are summed as a binary tree of in-place axpy tasks, each
 * pinned to the device of its accumulator, so the runtime moves the other operand device to device
 * (peer-to-peer where enabled) and the pairs of one level run on different GPUs at once.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { TaskHandle } from '../../runtime/task.js';

export interface MultiGpuSum {
  /** The tensor that holds the sum when `wait` resolves (partials[0], or a new [1] tensor). */
  readonly result: Tensor;
  readonly tasks: readonly TaskHandle[];
  /** Resolves when every task finished; rejects with the first failure. */
  wait(): Promise<void>;
}

function settle(tasks: readonly TaskHandle[]): Promise<void> {
  return Promise.all(tasks.map((t) => t.done)).then(() => undefined);
}

/**
 * partials[0] := Σ partials, elementwise; partials[i] is expected on devices[i] (a device id such as
 * 'cuda1'). log2(n) levels: at stride s, partials[i] += partials[i + s] on devices[i]. The other
 * partials are used as scratch (partials[i] for i > 0 hold intermediate sums afterwards).
 */
export function sumPartials(
  rt: Runtime,
  partials: readonly Tensor[],
  devices: readonly string[],
): MultiGpuSum {
  if (partials.length === 0 || partials.length !== devices.length)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `sumPartials: need one device per partial, got ${partials.length} partials and ${devices.length} devices`,
    );
  const tasks: TaskHandle[] = [];
  for (let s = 1; s < partials.length; s *= 2)
    for (let i = 0; i + s < partials.length; i += 2 * s)
      tasks.push(
        rt.submit({
          kernel: 'axpy',
          args: { x: partials[i + s]!, y: partials[i]! },
          scalars: { alpha: 1 },
          device: devices[i]!,
          name: `sum(${i}+=${i + s})`,
        }),
      );
  return { result: partials[0]!, tasks, wait: () => settle(tasks) };
}

/**
 * The sum of every element of a tensor split into shards, shards[i] on devices[i]: each GPU reduces
 * its shard, then the [1] partials are summed across GPUs with `sumPartials`.
 */
export function shardedSum(rt: Runtime, shards: readonly Tensor[], devices: readonly string[]): MultiGpuSum {
  if (shards.length !== devices.length)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'shardedSum: need one device per shard');
  const partials = shards.map((x) => rt.tensor([1], x.dtype));
  const local = shards.map((x, i) =>
    rt.submit({
      kernel: 'reduce',
      args: { x, y: partials[i]! },
      scalars: { op: 'sum', all: true },
      device: devices[i]!,
      name: `partial(${i})`,
    }),
  );
  const sum = sumPartials(rt, partials, devices);
  const tasks = [...local, ...sum.tasks];
  return { result: sum.result, tasks, wait: () => settle(tasks) };
}
