/**
 * The values of a run with control flow: tensors (known on the host, or on the device), sequences of
 * tensors and optionals, and the reference counts that free a device tensor once no value holds it
 * (a sequence shares its tensors with the sequence it was made from, a Loop passes a carried value
 * from one iteration to the next without a copy).
 */
import type { Tensor } from '../../memory/tensor.js';
import type { ElemType, HostTensor } from '../host-tensor.js';

export interface TensorVal {
  readonly kind: 'tensor';
  readonly type: ElemType;
  readonly dims: readonly number[];
  /** The contents when known on the host (folded, an integer input, a value read back). */
  readonly host?: HostTensor;
  /** The device tensor when computed by kernels; counted in Refs. */
  readonly dev?: Tensor;
  /** Depends on no graph input (initializers, Constant nodes and their folding). */
  readonly constant: boolean;
}

export interface SeqVal {
  readonly kind: 'sequence';
  readonly elemType: ElemType;
  readonly items: readonly TensorVal[];
}

export interface OptVal {
  readonly kind: 'optional';
  /** undefined: the empty optional. */
  readonly value: TensorVal | SeqVal | undefined;
}

export type RunValue = TensorVal | SeqVal | OptVal;

export function hostVal(t: HostTensor, constant: boolean): TensorVal {
  return { kind: 'tensor', type: t.type, dims: t.dims, host: t, constant };
}

/** The device tensors a value holds (each once per holding). */
function tensorsOf(v: RunValue, out: Tensor[] = []): Tensor[] {
  if (v.kind === 'tensor') {
    if (v.dev) out.push(v.dev);
  } else if (v.kind === 'sequence') for (const t of v.items) tensorsOf(t, out);
  else if (v.value) tensorsOf(v.value, out);
  return out;
}

/**
 * Holders per device tensor. A value made by a kernel starts with one holder (its producer's output);
 * retain adds one for every further holder, release drops one and frees the tensor at zero.
 */
export class Refs {
  private readonly counts = new Map<Tensor, number>();

  constructor(private readonly free: (t: Tensor) => void) {}

  /** A tensor just allocated for a value: its first holder. */
  adopt(t: Tensor): void {
    this.counts.set(t, 1);
  }

  retain<V extends RunValue>(v: V): V {
    for (const t of tensorsOf(v)) this.counts.set(t, (this.counts.get(t) ?? 0) + 1);
    return v;
  }

  release(v: RunValue | undefined): void {
    if (!v) return;
    for (const t of tensorsOf(v)) {
      const n = (this.counts.get(t) ?? 1) - 1;
      if (n > 0) this.counts.set(t, n);
      else {
        this.counts.delete(t);
        this.free(t);
      }
    }
  }

  /** Frees every tensor still held (a run that threw part way). */
  releaseAll(): void {
    for (const t of this.counts.keys()) this.free(t);
    this.counts.clear();
  }
}
