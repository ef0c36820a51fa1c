/**
 * The Trainer's steps as one recorded step replayed (TrainSpec.staticStep): the first step is recorded
 * with StaticStep over input tensors made once; each later step writes its batch into those tensors,
 * counts the optimizer's step (writing the schedule's rate into its device scalars) and submits the
 * recorded step again. The loss tensor is the same every step, so its read is queued right after the
 * step (before the next one can overwrite it) and awaited one step later.
 */
import { toNumbers } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { Nn } from './context.js';
import type { AdamW } from './optim/adamw.js';
import { StaticStep } from './static-step.js';
import type { StepInputs } from './train-data.js';
import type { Var } from './var.js';

export class StaticTraining {
  private step: StaticStep<Var> | null = null;
  private inputs: Var[] = [];

  /**
   * `update` is the step's optimizer update at rate lr (default `optimizer.step({ lr })`; fp16's
   * DeviceGradScaler.update), recorded with the step; a replay counts the step and writes its rate.
   */
  constructor(
    private readonly nn: Nn,
    private readonly optimizer: AdamW,
    private readonly update: (lr: number) => void = (lr) => optimizer.step({ lr }),
  ) {}

  /** Kernels in the recorded step (0 before the first). */
  get kernels(): number {
    return this.step?.kernels ?? 0;
  }

  /**
   * Submits one step on `data` at learning rate `lr`; resolves once it is queued, with the promise of its
   * loss (its read already queued; wrapped, as an async function would otherwise wait for it).
   */
  async submit(data: StepInputs, lr: number): Promise<{ readonly loss: Promise<number> }> {
    const nn = this.nn;
    let writes: Promise<void>[] = [];
    if (this.step === null) {
      this.inputs = data.arrays.map((a) => nn.input(a.values, a.shape, a.dtype));
      const inputs = this.inputs;
      try {
        this.step = await StaticStep.record(nn, async () => {
          const loss = data.loss(inputs);
          await loss.backward();
          this.update(lr);
          return loss;
        });
      } catch (e) {
        this.dispose(); // the inputs made for a step that could not be recorded
        throw e;
      }
    } else {
      // Every input checked before any is written: a refused batch leaves the recorded inputs as they were.
      data.arrays.forEach((a, i) => {
        const t = this.inputs[i]?.data;
        if (t === undefined || a.values.length !== t.size)
          throw new TandemError(
            'TANDEM_ERR_SHAPE',
            `static step: input ${i} has ${a.values.length} elements, the recorded step's ${t?.size ?? 'none'}`,
          );
      });
      writes = data.arrays.map((a, i) => nn.rt.write(this.inputs[i]!.data, a.values));
      this.optimizer.replayStep({ lr });
    }
    this.step.run();
    const loss = this.step.value.data;
    const read = nn.rt.read(loss);
    const value = Promise.all([read, ...writes]).then(([h]) => toNumbers(loss.dtype, h)[0]!);
    // Awaited by the caller one step later; marked handled now so a failure before then is not fatal.
    value.catch(() => undefined);
    return { loss: value };
  }

  dispose(): void {
    this.step?.dispose();
    this.step = null;
    for (const v of this.inputs) if (!v.data.freed) this.nn.free(v.data);
    this.inputs = [];
  }
}
