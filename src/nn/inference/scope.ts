/**
 * A forward pass's working set: the tensors it makes (freed together at the end — the runtime frees each
 * once the tasks already submitted on it are done, so nothing waits here) and the placement and labels
 * every kernel it submits carries.
 */
import type { DType } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';

/** The part of the runtime inference uses (the service hands models a narrowed runtime). */
export type InferenceRuntime = Pick<Runtime, 'tensor' | 'submit' | 'read' | 'free'>;

/** Where and under which labels a forward pass runs. */
export interface RunPlace {
  /** A device kind or id for rt.submit; undefined lets the scheduler place. */
  readonly device?: string | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
}

export class Scope {
  private readonly made: Tensor[] = [];

  constructor(
    readonly rt: InferenceRuntime,
    private readonly place: RunPlace,
  ) {}

  tensor(shape: readonly number[], dtype: DType): Tensor {
    const t = this.rt.tensor(shape, dtype);
    this.made.push(t);
    return t;
  }

  /** An i32 vector (token ids, positions, slots, row indices). */
  ints(values: readonly number[]): Tensor {
    const t = this.rt.tensor([values.length], 'i32', Int32Array.from(values));
    this.made.push(t);
    return t;
  }

  run(kernel: string, args: Readonly<Record<string, Tensor>>, scalars: Scalars = {}): void {
    this.rt.submit({
      kernel,
      args,
      scalars,
      ...(this.place.device === undefined ? {} : { device: this.place.device }),
      ...(this.place.tags === undefined ? {} : { tags: this.place.tags }),
    });
  }

  release(): void {
    for (const t of this.made.splice(0)) this.rt.free(t);
  }
}
