/**
 * What an Nn context is made with: its options, and the working precisions it accepts. Their own file
 * because Nn (context.ts) and its base class (submission.ts) both read them, and so configuration (a
 * model's config, a training spec) can name a precision without the autograd machinery.
 */
import { TandemError } from '../core/errors.js';

/** Working precision: parameters and activations in this dtype; accumulation is f32 (f64 for f64). */
export type Precision = 'f32' | 'bf16' | 'f16' | 'f64';

export const PRECISIONS: readonly Precision[] = ['f32', 'bf16', 'f16', 'f64'];

export interface NnOptions {
  /** A device kind or id every task of the model runs on ('cpu', 'cuda0'); default: the scheduler places. */
  readonly device?: string;
  readonly precision?: Precision;
  /** Seed for parameter initialisation and dropout masks. */
  readonly seed?: number;
  /** Labels put on every task (a service job's id: its trace and the device it ran on find them). */
  readonly tags?: Readonly<Record<string, string>>;
  /** Collect kernels into runtime sequences (see `Nn.sequences`); default off (the Trainer's: `TrainSpec`). */
  readonly sequences?: boolean;
}

/** The precision `options` ask for (f32 when none); an unknown one is refused (options may come from JSON). */
export function precisionOf(options: NnOptions): Precision {
  const precision = options.precision ?? 'f32';
  if (!PRECISIONS.includes(precision))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `unknown precision ${JSON.stringify(precision)}; expected one of ${PRECISIONS.join(', ')}`,
    );
  return precision;
}
