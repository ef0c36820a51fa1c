/**
 * fp16 loss scaling decided on the device: GradScaler's rules (grad-scaler.ts) run by the amp_update
 * kernel after each step's gradient norm, so no step waits for the host to read whether its gradients
 * overflowed — PyTorch's GradScaler with a fused AdamW works the same way (found_inf, the scale, the
 * growth tracker and the optimizer's step count are device tensors; nothing is read per step).
 *
 * Per step: the loss gradient is seeded with the device scale (Nn.lossScaleTensor: softmax_xent_scaled,
 * or a cast into a loss's seed); after the backward, the optimizer sums the gradients' squares
 * (computeNorm), amp_update decides on the device — a clean step advances AdamW's step count and writes
 * its lr, bias corrections and 1/scale into the optimizer's `hyper` tensor; an overflow leaves them and
 * the update ops skip (skipNonFinite) — and updates the scale and tracker. The host's GradScaler and
 * the optimizer's step count are brought up to date only when asked (`sync`: checkpoints, reports).
 */
import type { Tensor } from '../memory/tensor.js';
import type { Nn } from './context.js';
import { GradScaler, type GradScalerState } from './grad-scaler.js';
import type { AdamW } from './optim/adamw.js';

export class DeviceGradScaler {
  /** f64 [1]: the loss scale (an f32 value), read by the loss's gradient kernels. */
  readonly scale: Tensor;
  /** f64 [2]: the growth tracker and the optimizer steps taken (skipped steps not counted). */
  private readonly state: Tensor;
  /** The options and, after `sync`, the state; `load` writes its state to the device. */
  readonly host: GradScaler;

  constructor(
    private readonly nn: Nn,
    private readonly optimizer: AdamW,
  ) {
    this.host = new GradScaler();
    this.scale = nn.tensor([1], 'f64');
    this.state = nn.tensor([2], 'f64');
    this.writeState();
  }

  /** A failed write of the state, reported by the next update. */
  private writeError: unknown = null;

  private writeState(): void {
    const rt = this.nn.rt;
    const failed = (e: unknown): void => {
      this.writeError = e;
    };
    // Not awaited: the runtime orders the writes before the kernels that read the tensors.
    void rt.write(this.scale, Float64Array.of(this.host.scale)).catch(failed);
    void rt.write(this.state, Float64Array.of(this.host.growthTracker, this.optimizer.steps)).catch(failed);
  }

  /** Seeds this Nn's next loss gradients with the device scale (Nn.lossScale stays 1). */
  seed(): void {
    this.nn.lossScale = 1;
    this.nn.lossScaleTensor = this.scale;
  }

  /**
   * The step's update after its backward: the squared norm, amp_update, then the optimizer's update
   * reading its values from the device and skipping on an overflow. Nothing is read on the host.
   */
  update(lr: number): void {
    const opt = this.optimizer;
    const hyper = opt.hyperTensor;
    const lrTensor = opt.lrTensor;
    if (hyper === null || lrTensor === null)
      throw new Error('DeviceGradScaler: the optimizer needs deviceScalars');
    if (this.writeError !== null) throw this.writeError;
    opt.computeNorm();
    const s = this.host.stateDict() as GradScalerState;
    // The optimizer writes the step's lr first; amp_update reads it and writes the rest of `hyper`.
    opt.applyUpdate({ lr, skipNonFinite: true, hyperOnDevice: true }, () =>
      this.nn.submit(
        'amp_update',
        { norm: opt.normTensor!, scale: this.scale, state: this.state, hyper, lr: lrTensor },
        {
          beta1: opt.betas.beta1,
          beta2: opt.betas.beta2,
          growthFactor: s.growth_factor,
          backoffFactor: s.backoff_factor,
          growthInterval: s.growth_interval,
        },
      ),
    );
  }

  /**
   * Reads the device state (after every submitted step): the host GradScaler gets the scale and
   * tracker, the optimizer the steps it really took. A host sync: for checkpoints and reports.
   */
  async sync(): Promise<void> {
    const [scale] = await this.nn.readTensor(this.scale);
    const [tracker, steps] = await this.nn.readTensor(this.state);
    const s = this.host.stateDict() as GradScalerState;
    this.host.loadStateDict({ ...s, scale: scale!, _growth_tracker: tracker! });
    this.optimizer.steps = steps!;
  }

  /**
   * After a checkpoint set the optimizer's step count: writes it, and the saved GradScaler state
   * (torch's state_dict; null keeps the current one), to the device.
   */
  load(state: Partial<GradScalerState> | null): void {
    if (state !== null) this.host.loadStateDict(state);
    this.writeState();
  }

  dispose(): void {
    if (this.nn.lossScaleTensor === this.scale) this.nn.lossScaleTensor = null;
    this.nn.free(this.scale);
    this.nn.free(this.state);
  }
}
