/** SGD with momentum, dampening, Nesterov and weight decay: PyTorch's torch.optim.SGD. */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { Optimizer, type StepOptions } from './optimizer.js';

export interface SgdOptions {
  readonly lr: number;
  readonly momentum?: number;
  readonly dampening?: number;
  readonly weightDecay?: number;
  readonly nesterov?: boolean;
  readonly maxNorm?: number;
}

export class Sgd extends Optimizer {
  private readonly buffers = new Map<Var, Tensor>();

  constructor(
    nn: Nn,
    params: readonly Var[],
    private readonly o: SgdOptions,
  ) {
    super(nn, params);
    if (!(o.lr >= 0 && Number.isFinite(o.lr)))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `SGD: lr must be a non-negative number, got ${o.lr}`,
      );
    if (o.nesterov && !((o.momentum ?? 0) > 0 && (o.dampening ?? 0) === 0))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'SGD: Nesterov momentum requires a momentum and zero dampening',
      );
  }

  protected update(p: Var, norm: Tensor, options: StepOptions): void {
    let buf = this.buffers.get(p);
    const first = buf === undefined;
    if (buf === undefined) {
      buf = this.nn.tensor(p.shape, p.dtype);
      this.buffers.set(p, buf);
    }
    this.nn.submit(
      'sgd',
      { p: p.data, g: p.grad!, buf, norm },
      {
        lr: options.lr ?? this.o.lr,
        momentum: this.o.momentum ?? 0,
        dampening: this.o.dampening ?? 0,
        weightDecay: this.o.weightDecay ?? 0,
        nesterov: this.o.nesterov ?? false,
        first,
        gradScale: options.gradScale ?? 1,
        maxNorm: this.o.maxNorm ?? 0,
        skipNonFinite: options.skipNonFinite ?? false,
      },
    );
  }
}
