/**
 * The runtime's live tensors: numbered and owned by the runtime when made, released when freed (once
 * the tasks already submitted on them are done), and all released when the runtime closes. Checking a
 * tensor (`Runtime.checkTensor`) stays with the runtime: it runs for every argument of every task.
 */
import type { DType, HostArray } from '../core/dtype.js';
import { assertDType } from '../core/dtype.js';
import { assertShape } from '../core/shape.js';
import type { Coherence } from '../memory/coherence.js';
import type { HostNode } from '../memory/host-node.js';
import { Tensor } from '../memory/tensor.js';
import { validateHostData, writeHost } from './host-access.js';
import { Task, unfinished } from './task.js';

export class TensorTable {
  private readonly live = new Map<number, Tensor>();
  private nextTensorId = 1;

  constructor(
    private readonly owner: object,
    private readonly coherence: Coherence,
    private readonly host: HostNode,
  ) {}

  get size(): number {
    return this.live.size;
  }

  values(): IterableIterator<Tensor> {
    return this.live.values();
  }

  /** `Runtime.tensor`: without data it reads as zeros until written. */
  create(shape: readonly number[], dtype: DType, data: ArrayLike<number> | HostArray | undefined): Tensor {
    const s = assertShape(shape);
    const dt = assertDType(dtype);
    const t = new Tensor(this.nextTensorId++, s, dt, this.owner);
    if (data !== undefined) {
      validateHostData(t, data);
      const buf = this.coherence.acquireWrite(t, this.host);
      writeHost(t, buf, data);
      this.coherence.commitWrite(t, this.host);
    }
    this.live.set(t.id, t);
    return t;
  }

  /** `Runtime.free` of a tensor it has checked: released once the tasks already submitted on it are done. */
  free(t: Tensor): void {
    t.freed = true;
    // The common case (nothing left on it) builds no list and no closure: this runs once per tensor.
    if (!unfinished(t.lastWriter) && !t.readers.some(unfinished)) {
      this.coherence.release(t);
      this.live.delete(t.id);
      return;
    }
    const pending = [t.lastWriter, ...t.readers].filter(
      (x): x is Task => x instanceof Task && !x.isFinished(),
    );
    const release = (): void => {
      this.coherence.release(t);
      this.live.delete(t.id);
    };
    void Promise.allSettled(pending.map((p) => p.done)).then(release);
  }

  /** Releases every tensor's memory (the runtime is closing). */
  releaseAll(): void {
    for (const t of this.live.values()) this.coherence.release(t);
    this.live.clear();
  }
}
