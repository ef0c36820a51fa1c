/** The layers: Linear, LayerNorm, Conv2d (parameters + the op that uses them). */
import type { Nn } from '../context.js';
import { constant, uniform } from '../init.js';
import { conv2d } from '../ops/conv.js';
import { type Activation, linear } from '../ops/linear.js';
import { layerNorm } from '../ops/norm.js';
import type { Var } from '../var.js';
import { Module } from './module.js';

export interface LinearOptions {
  readonly bias?: boolean;
  readonly act?: Activation;
  /** Initial weights [out, in] (default: PyTorch's U(−1/√in, 1/√in)). */
  readonly weight?: ArrayLike<number>;
  readonly biasInit?: ArrayLike<number>;
}

export class Linear extends Module {
  readonly weight: Var;
  readonly bias: Var | null;
  readonly act: Activation | undefined;

  constructor(
    readonly nn: Nn,
    readonly inFeatures: number,
    readonly outFeatures: number,
    options: LinearOptions = {},
  ) {
    super();
    const bound = 1 / Math.sqrt(inFeatures);
    this.weight = this.param(
      'weight',
      nn.parameter(
        [outFeatures, inFeatures],
        options.weight ?? uniform(outFeatures * inFeatures, bound, nn.takeSeed()),
        'weight',
      ),
    );
    this.bias =
      options.bias === false
        ? null
        : this.param(
            'bias',
            nn.parameter(
              [outFeatures],
              options.biasInit ?? uniform(outFeatures, bound, nn.takeSeed()),
              'bias',
            ),
          );
    this.act = options.act;
  }

  forward(x: Var): Var {
    return linear(this.nn, x, this.weight, this.bias, this.act);
  }
}

export class LayerNorm extends Module {
  readonly weight: Var;
  readonly bias: Var;

  constructor(
    readonly nn: Nn,
    readonly features: number,
  ) {
    super();
    this.weight = this.param('weight', nn.parameter([features], constant(features, 1), 'weight'));
    this.bias = this.param('bias', nn.parameter([features], constant(features, 0), 'bias'));
  }

  forward(x: Var): Var {
    return layerNorm(this.nn, x, this.weight, this.bias);
  }
}

export interface Conv2dOptions {
  readonly kernel: number;
  readonly stride?: number;
  readonly padding?: number;
}

export class Conv2d extends Module {
  readonly weight: Var;
  readonly bias: Var;

  constructor(
    readonly nn: Nn,
    readonly inChannels: number,
    readonly outChannels: number,
    readonly options: Conv2dOptions,
  ) {
    super();
    const k = options.kernel;
    const bound = 1 / Math.sqrt(inChannels * k * k);
    this.weight = this.param(
      'weight',
      nn.parameter(
        [outChannels, inChannels, k, k],
        uniform(outChannels * inChannels * k * k, bound, nn.takeSeed()),
        'weight',
      ),
    );
    this.bias = this.param(
      'bias',
      nn.parameter([outChannels], uniform(outChannels, bound, nn.takeSeed()), 'bias'),
    );
  }

  forward(x: Var): Var {
    return conv2d(this.nn, x, this.weight, this.bias, this.options);
  }
}
