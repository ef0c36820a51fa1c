/**
 * AdamW with decoupled weight decay and bias correction, exactly PyTorch's formula; f16/bf16 parameters
 * keep an f32 master copy and f32 moments (the update runs on the master, the working copy is its
 * rounding). Optional global-norm clipping reads the norm on the device.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { HYPER_LENGTH, adamwHyperValues } from '../../kernels/adamw/params.js';
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
  /**
   * Keep the values that change every step — the learning rate and the bias corrections — in a device
   * tensor the update kernels read (adamw_hyper), written by each step: a recorded step (StaticStep)
   * then replays with the schedule's new rate. Same arithmetic as without. Default off.
   */
  readonly deviceScalars?: boolean;
}

interface State {
  readonly m: Tensor;
  readonly v: Tensor;
  readonly master: Tensor | null;
}

export class AdamW extends Optimizer {
  readonly lr: number;
  private readonly o: Required<Omit<AdamWOptions, 'decayFor' | 'deviceScalars'>>;
  /** deviceScalars: the f64 [lr, lr/(1−β1ᵗ), (1−β2ᵗ)^0.5, gradScale] the update kernels read. */
  private readonly hyper: Tensor | null;
  /** deviceScalars: the step's learning rate alone, for amp_update (steps taken with hyperOnDevice). */
  private readonly lr1: Tensor | null;
  /** Whether the last step took hyperOnDevice (a replay repeats it). */
  private hyperOnDevice = false;
  /** A failed write into `hyper`, reported by the next step. */
  private hyperError: unknown = null;
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
    this.hyper = options.deviceScalars === true ? nn.tensor([HYPER_LENGTH], 'f64') : null;
    this.lr1 = options.deviceScalars === true ? nn.tensor([1], 'f64') : null;
    for (const p of params) this.state.set(p, this.makeState(p));
  }

  /** β1 and β2 (amp_update forms the bias corrections on the device from them). */
  get betas(): { readonly beta1: number; readonly beta2: number } {
    return { beta1: this.o.beta1, beta2: this.o.beta2 };
  }

  protected override get replayable(): boolean {
    return this.hyper !== null;
  }

  /**
   * deviceScalars: the f64 tensor the update kernels read their per-step values from (HYPER_LENGTH:
   * lr, lr/(1−β1ᵗ), (1−β2ᵗ)^0.5, gradScale), for a kernel that writes them (amp_update); else null.
   */
  get hyperTensor(): Tensor | null {
    return this.hyper;
  }

  /** deviceScalars: the f64 [1] learning rate of a step taken with hyperOnDevice (amp_update reads it). */
  get lrTensor(): Tensor | null {
    return this.lr1;
  }

  protected override stepTaken(options: StepOptions): void {
    if (this.hyper === null || this.lr1 === null) {
      if (options.hyperOnDevice === true)
        throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'AdamW: hyperOnDevice needs deviceScalars');
      return;
    }
    if (this.hyperError !== null) throw this.hyperError;
    // A replay passes only lr: it keeps the recorded step's choice.
    const onDevice = options.hyperOnDevice ?? this.hyperOnDevice;
    this.hyperOnDevice = onDevice;
    const failed = (e: unknown): void => {
      this.hyperError = e;
    };
    const o = this.o;
    if (onDevice) {
      // Not awaited: ordered before the kernel that reads it, after the last step's reads.
      void this.nn.rt.write(this.lr1, Float64Array.of(options.lr ?? o.lr)).catch(failed);
      return;
    }
    const values = adamwHyperValues(o, options.lr ?? o.lr, this.steps, options.gradScale ?? 1);
    // Not awaited: the runtime orders the write after the last step's reads and before this one's.
    void this.nn.rt.write(this.hyper, values).catch(failed);
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
    for (const t of [this.hyper, this.lr1]) if (t !== null && !t.freed) this.nn.free(t);
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
      beta1: o.beta1,
      beta2: o.beta2,
      eps: o.eps,
      weightDecay: decay,
      gradScale: options.gradScale ?? 1,
      maxNorm: o.maxNorm,
      skipNonFinite: options.skipNonFinite ?? false,
    };
    const args = { p: p.data, g: p.grad!, m: s.m, v: s.v, norm };
    const withMaster = s.master === null ? args : { ...args, master: s.master };
    const op = s.master === null ? 'adamw' : 'adamw_mixed';
    // With device scalars the step's rate, bias corrections and gradScale are read from `hyper`.
    if (this.hyper !== null) {
      const { gradScale: _inHyper, ...hyperScalars } = scalars;
      this.nn.submit(`${op}_hyper`, { ...withMaster, hyper: this.hyper }, hyperScalars);
    } else this.nn.submit(op, withMaster, { ...scalars, lr: options.lr ?? o.lr, step: this.steps });
  }
}
