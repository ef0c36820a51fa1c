/** Image classifiers for Fashion-MNIST-sized inputs ([N, 1, 28, 28], 10 classes): an MLP and a small CNN. */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import { Conv2d, Linear } from '../modules/layers.js';
import { Module } from '../modules/module.js';
import { activation, flatten } from '../ops/elementwise.js';
import { pool2d } from '../ops/conv.js';
import { crossEntropy } from '../ops/loss.js';
import type { Var } from '../var.js';

export interface Classifier {
  readonly nn: Nn;
  /** [N, classes] scores for images [N, 1, H, W]. */
  logits(images: Var): Var;
  /** Mean cross-entropy against labels (i32 [N]). */
  loss(images: Var, labels: Var): Var;
  namedParameters(): [string, Var][];
  parameters(): Var[];
  parameterCount(): number;
}

export interface MlpConfig {
  /** Layer widths from input to classes, e.g. [784, 512, 512, 10]. */
  readonly sizes: readonly number[];
}

export class Mlp extends Module implements Classifier {
  readonly layers: Linear[];

  constructor(
    readonly nn: Nn,
    readonly config: MlpConfig = { sizes: [784, 512, 512, 10] },
  ) {
    super();
    const s = config.sizes;
    if (s.length < 2 || s.some((n) => !Number.isInteger(n) || n < 1))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `mlp: sizes must be at least two positive integers, got [${s.join(', ')}]`,
      );
    this.layers = s
      .slice(1)
      .map((out, i) =>
        this.child(`fc${i + 1}`, new Linear(nn, s[i]!, out, i + 2 < s.length ? { act: 'relu' } : {})),
      );
  }

  logits(images: Var): Var {
    let x = images.shape.length === 2 ? images : flatten(this.nn, images);
    for (const l of this.layers) x = l.forward(x);
    return x;
  }

  loss(images: Var, labels: Var): Var {
    return crossEntropy(this.nn, this.logits(images), labels);
  }
}

/** conv(1→32, 3×3) → relu → maxpool 2 → conv(32→64) → relu → maxpool 2 → fc 3136→128 → relu → fc 128→10. */
export class Cnn extends Module implements Classifier {
  readonly conv1: Conv2d;
  readonly conv2: Conv2d;
  readonly fc1: Linear;
  readonly fc2: Linear;

  constructor(
    readonly nn: Nn,
    readonly size = 28,
    readonly classes = 10,
  ) {
    super();
    this.conv1 = this.child('conv1', new Conv2d(nn, 1, 32, { kernel: 3, padding: 1 }));
    this.conv2 = this.child('conv2', new Conv2d(nn, 32, 64, { kernel: 3, padding: 1 }));
    const side = Math.floor(Math.floor(size / 2) / 2);
    this.fc1 = this.child('fc1', new Linear(nn, 64 * side * side, 128, { act: 'relu' }));
    this.fc2 = this.child('fc2', new Linear(nn, 128, classes));
  }

  logits(images: Var): Var {
    const nn = this.nn;
    let x = pool2d(nn, activation(nn, this.conv1.forward(images), 'relu'), 'max', { kernel: 2 });
    x = pool2d(nn, activation(nn, this.conv2.forward(x), 'relu'), 'max', { kernel: 2 });
    return this.fc2.forward(this.fc1.forward(flatten(nn, x)));
  }

  loss(images: Var, labels: Var): Var {
    return crossEntropy(this.nn, this.logits(images), labels);
  }
}
