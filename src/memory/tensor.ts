/**
 * A tensor is a data handle: shape, dtype, and one replica per memory node with an MSI state.
 * Modified: the only valid copy; Shared: valid, other valid copies may exist; Invalid: stale or none.
 */
import type { DType } from '../core/dtype.js';
import { bytesPerElement } from '../core/dtype.js';
import type { Shape } from '../core/shape.js';
import { numel, shapeStr } from '../core/shape.js';
import type { DeviceBuffer, TensorDesc } from '../devices/device.js';

export type ReplicaState = 'M' | 'S' | 'I';

export interface Replica {
  buffer: DeviceBuffer | null;
  state: ReplicaState;
  /** Callbacks waiting for a copy into this replica that is in flight. */
  pending: Array<(err: Error | null) => void> | null;
  /** Runtime clock of the last use, for least-recently-used eviction. */
  lastUse: number;
  /** Tasks dispatched but not finished that use this replica (pinned against eviction). */
  users: number;
}

/** What the dependency tracker needs to know about a task. */
export interface AccessRecord {
  readonly id: number;
  isFinished(): boolean;
}

export class Tensor implements TensorDesc {
  readonly id: number;
  readonly shape: Shape;
  readonly dtype: DType;
  readonly bytes: number;
  readonly size: number;
  readonly owner: object;
  readonly replicas: (Replica | undefined)[] = [];
  /** False until first written: an unwritten tensor reads as zeros. */
  initialized = false;
  freed = false;
  /** Set when the only valid copy was on a device that faulted. */
  lostReason: string | null = null;
  lastWriter: AccessRecord | null = null;
  readers: AccessRecord[] = [];

  constructor(id: number, shape: Shape, dtype: DType, owner: object) {
    this.id = id;
    this.shape = shape;
    this.dtype = dtype;
    this.size = numel(shape);
    this.bytes = this.size * bytesPerElement(dtype);
    this.owner = owner;
  }

  get desc(): TensorDesc {
    return { shape: this.shape, dtype: this.dtype, bytes: this.bytes };
  }

  replica(nodeIndex: number): Replica {
    let r = this.replicas[nodeIndex];
    if (!r) {
      r = { buffer: null, state: 'I', pending: null, lastUse: 0, users: 0 };
      this.replicas[nodeIndex] = r;
    }
    return r;
  }

  /** Node indices holding a valid (M or S) copy. */
  validNodes(): number[] {
    const out: number[] = [];
    this.replicas.forEach((r, i) => {
      if (r && r.state !== 'I') out.push(i);
    });
    return out;
  }

  toString(): string {
    return `tensor#${this.id}${shapeStr(this.shape)}:${this.dtype}`;
  }
}
