/**
 * A forward pass's working set: the tensors it makes (freed together at the end — the runtime frees each
 * once the tasks already submitted on it are done, so nothing waits here) and the placement and labels
 * every kernel it submits carries.
 *
 * With `sequence` on, the kernels are collected and go to the runtime as one sequence task at the next
 * `flush` (before anything is read): a forward pass of ~90 small kernels then costs the runtime's
 * per-task work once instead of 90 times. The kernels, their order and their results are the same.
 */
import type { DType, HostArray } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { PreparedSequence } from '../../runtime/sequence.js';
import { SequenceCollector } from '../../runtime/sequence-collector.js';

/** The part of the runtime inference uses (the service hands models a narrowed runtime). */
export type InferenceRuntime = Pick<
  Runtime,
  'tensor' | 'submit' | 'submitSequence' | 'prepareSequence' | 'submitPrepared' | 'read' | 'write' | 'free'
>;

/** Where and under which labels a forward pass runs. */
export interface RunPlace {
  /** A device kind or id for rt.submit; undefined lets the scheduler place. */
  readonly device?: string | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
}

export class Scope {
  private readonly made: Tensor[] = [];
  /** Kernels collected for the next sequence (sequence mode only). */
  private readonly collector: SequenceCollector;

  constructor(
    readonly rt: InferenceRuntime,
    private readonly place: RunPlace,
    private readonly sequence = false,
  ) {
    this.collector = new SequenceCollector(rt, () => this.where(), 'forward');
  }

  tensor(shape: readonly number[], dtype: DType): Tensor {
    const t = this.rt.tensor(shape, dtype);
    this.made.push(t);
    return t;
  }

  /** An i32 tensor (token ids, positions, slots, row indices): a vector unless `shape` is given. */
  ints(values: readonly number[] | Int32Array, shape: readonly number[] = [values.length]): Tensor {
    const t = this.rt.tensor(shape, 'i32', Int32Array.from(values));
    this.made.push(t);
    return t;
  }

  run(kernel: string, args: Readonly<Record<string, Tensor>>, scalars: Scalars = {}): void {
    if (this.sequence) {
      this.collector.push({ kernel, args, scalars });
      return;
    }
    this.rt.submit({ kernel, args, scalars, ...this.where() });
  }

  /** Submits the kernels collected so far as one sequence (sequence mode; a no-op otherwise). */
  flush(): void {
    this.collector.flush();
  }

  /** The kernels collected so far as a prepared sequence (sequence mode), to be run again and again. */
  prepare(name: string): PreparedSequence {
    const steps = this.collector.take();
    const device = this.place.device;
    return this.rt.prepareSequence({ steps, name, ...(device === undefined ? {} : { device }) });
  }

  /** Hands over the tensors made so far: the caller frees them, `release` no longer does. */
  adopt(): Tensor[] {
    return this.made.splice(0);
  }

  /** Reads a tensor once the kernels before it are submitted. */
  read(t: Tensor): Promise<HostArray> {
    this.flush();
    return this.rt.read(t);
  }

  /** Frees what the scope made; kernels collected but not flushed (a pass that threw) are dropped. */
  release(): void {
    this.collector.drop();
    for (const t of this.made.splice(0)) this.rt.free(t);
  }

  private where(): { device?: string; tags?: Readonly<Record<string, string>> } {
    return {
      ...(this.place.device === undefined ? {} : { device: this.place.device }),
      ...(this.place.tags === undefined ? {} : { tags: this.place.tags }),
    };
  }
}
