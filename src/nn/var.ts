/**
 * A value in an autograd graph: a runtime tensor, and where it came from. Leaves are parameters
 * (requiresGrad, with a gradient tensor that lives across steps) or inputs (no gradient); every other
 * Var is made by an op of the context, which records on the tape how to send gradients back to the
 * op's inputs — as runtime tasks, so the backward pass is part of the same task graph.
 */
import type { DType } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { Shape } from '../core/shape.js';
import type { Tensor } from '../memory/tensor.js';

/** What a Var needs from its context (the context implements it; the type keeps the files acyclic). */
export interface VarHost {
  backward(root: Var): Promise<void>;
  readTensor(t: Tensor): Promise<Float64Array>;
}

export type VarKind = 'parameter' | 'input' | 'intermediate';

export class Var {
  /** The gradient (same shape and dtype as the data), made on the first contribution. */
  grad: Tensor | null = null;
  /**
   * False until a contribution was written into `grad` since the last zeroGrad: the next one then
   * overwrites instead of adding (no fill task needed to clear gradients between steps).
   */
  gradWritten = false;
  /** How many recorded ops took this value as an input (a gradient can be handed over by reference
   * only to a value used once: nothing else will add into it). */
  uses = 0;

  constructor(
    readonly host: VarHost,
    readonly data: Tensor,
    readonly kind: VarKind,
    readonly requiresGrad: boolean,
    readonly name = '',
  ) {}

  get shape(): Shape {
    return this.data.shape;
  }

  get dtype(): DType {
    return this.data.dtype;
  }

  /** Sends gradients from this scalar loss back to every parameter it depends on (tasks submitted;
   * resolves once they are queued and the step's activations are released). */
  backward(): Promise<void> {
    if (!this.requiresGrad)
      return Promise.reject(
        new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          'backward: this value does not depend on any parameter (made under noGrad, or from inputs only)',
        ),
      );
    return this.host.backward(this);
  }

  /** The values as numbers (waits for the tasks that write them). */
  values(): Promise<Float64Array> {
    return this.host.readTensor(this.data);
  }

  /** The single value of a one-element Var (a loss). */
  async item(): Promise<number> {
    if (this.data.size !== 1)
      throw new TandemError('TANDEM_ERR_SHAPE', `item: the value has ${this.data.size} elements, not 1`);
    return (await this.values())[0]!;
  }

  /** The gradient as numbers (zeros if none was written since the last zeroGrad). */
  async gradValues(): Promise<Float64Array> {
    if (this.grad === null || !this.gradWritten) return new Float64Array(this.data.size);
    return this.host.readTensor(this.grad);
  }
}
