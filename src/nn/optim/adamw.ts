/**
 * AdamW with decoupled weight decay and bias correction, exactly PyTorch's formula; f16/bf16 parameters
 * keep an f32 master copy and f32 moments (the update runs on the master, the working copy is its
 * rounding). Optional global-norm clipping reads the norm on the device.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { Optimizer, type StepOptions } from './optimizer.js';

export interface AdamWOptions {
  readonly lr?: number;
  readonly beta1?: number;
  readonly beta2?: number;
  readonly eps?: number;
  readonly weightDecay?: number;
  /** Decay only parameters of rank ≥ 2 (weights, embeddings; not biases or norms) — nanoGPT's rule. */
  readonly decayMatricesOnly?: boolean;
  /** Clip the global gradient norm to this (0: no clipping). */
  readonly maxNorm?: number;
  /**
   * Whether `p` is decayed, overriding decayMatricesOnly (ZeRO-1's flat pieces of a parameter decay as
   * the parameter would).
   */
  readonly decayFor?: (p: Var) => boolean;
}

interface State {
  readonly m: Tensor;
  readonly v: Tensor;
  readonly master: Tensor | null;
}

export class AdamW extends Optimizer {
  readonly lr: number;
  private readonly o: Required<Omit<AdamWOptions, 'decayFor'>>;
  private readonly decayFor: ((p: Var) => boolean) | null;
  private readonly state = new Map<Var, State>();

  constructor(nn: Nn, params: readonly Var[], options: AdamWOptions = {}) {
    super(nn, params);
    this.o = {
      lr: options.lr ?? 1e-3,
      beta1: options.beta1 ?? 0.9,
      beta2: options.beta2 ?? 0.999,
      eps: options.eps ?? 1e-8,
      weightDecay: options.weightDecay ?? 0.01,
      decayMatricesOnly: options.decayMatricesOnly ?? false,
      maxNorm: options.maxNorm ?? 0,
    };
    this.decayFor = options.decayFor ?? null;
    const o = this.o;
    const bad = (['lr', 'eps', 'weightDecay', 'maxNorm'] as const).find(
      (k) => !(o[k] >= 0 && Number.isFinite(o[k])),
    );
    if (bad !== undefined || !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `AdamW: ${bad ?? 'beta1 and beta2'} out of range`);
    this.lr = o.lr;
    for (const p of params) this.state.set(p, this.makeState(p));
  }

  private makeState(p: Var): State {
    const nn = this.nn;
    const half = p.dtype === 'f16' || p.dtype === 'bf16';
    const stat = half ? 'f32' : p.dtype;
    const m = nn.tensor(p.shape, stat);
    const v = nn.tensor(p.shape, stat);
    nn.submit('fill', { y: m }, { value: 0 });
    nn.submit('fill', { y: v }, { value: 0 });
    let master: Tensor | null = null;
    if (half) {
      master = nn.tensor(p.shape, 'f32');
      nn.submit('cast', { x: p.data, y: master });
    }
    return { m, v, master };
  }

  /** The moments and master weights, for checkpoints: `{name}.exp_avg`, `.exp_avg_sq`, `.master`. */
  stateTensors(p: Var): { m: Tensor; v: Tensor; master: Tensor | null } {
    return this.state.get(p)!;
  }

  /** Frees the moments and master weights (the optimizer is not used after this). */
  dispose(): void {
    for (const s of this.state.values())
      for (const t of [s.m, s.v, s.master]) if (t !== null) this.nn.free(t);
    this.state.clear();
    this.freeNorms();
  }

  protected override readsNorm(options: StepOptions): boolean {
    return this.o.maxNorm > 0 || options.skipNonFinite === true;
  }

  protected update(p: Var, norm: Tensor, options: StepOptions): void {
    const s = this.state.get(p)!;
    const o = this.o;
    const decays = this.decayFor !== null ? this.decayFor(p) : !(o.decayMatricesOnly && p.shape.length < 2);
    const decay = decays ? o.weightDecay : 0;
    const scalars = {
      lr: options.lr ?? o.lr,
      beta1: o.beta1,
      beta2: o.beta2,
      eps: o.eps,
      weightDecay: decay,
      step: this.steps,
      gradScale: options.gradScale ?? 1,
      maxNorm: o.maxNorm,
      skipNonFinite: options.skipNonFinite ?? false,
    };
    if (s.master === null) this.nn.submit('adamw', { p: p.data, g: p.grad!, m: s.m, v: s.v, norm }, scalars);
    else
      this.nn.submit(
        'adamw_mixed',
        { p: p.data, g: p.grad!, m: s.m, v: s.v, master: s.master, norm },
        scalars,
      );
  }
}
