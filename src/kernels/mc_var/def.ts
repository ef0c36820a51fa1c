/**
 * mc_var: losses of scenarios [first, first + n) for a packed portfolio (layout.ts), written to
 * `losses` [n]. The host sorts the losses for VaR and expected shortfall.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames, intScalar, numberScalar } from '../common/scalars.js';
import { checkArgNames, requireRank } from '../common/validate.js';
import { packedLength } from './layout.js';

export interface VarScalars {
  first: number;
  assets: number;
  positions: number;
  horizon: number;
  rate: number;
  v0: number;
  seed: number;
}

export function readVarScalars(scalars: Scalars): VarScalars {
  const op = 'mc_var';
  return {
    first: intScalar(op, scalars, 'first'),
    assets: intScalar(op, scalars, 'assets'),
    positions: intScalar(op, scalars, 'positions'),
    horizon: numberScalar(op, scalars, 'horizon'),
    rate: numberScalar(op, scalars, 'rate'),
    v0: numberScalar(op, scalars, 'v0'),
    seed: intScalar(op, scalars, 'k0') + intScalar(op, scalars, 'k1') * 2 ** 32,
  };
}

export const mcVarDef: KernelDef = {
  name: 'mc_var',
  args: [
    { name: 'portfolio', mode: 'r' },
    { name: 'losses', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('mc_var', this.args, args);
    checkScalarNames('mc_var', scalars, [
      'first',
      'assets',
      'positions',
      'horizon',
      'rate',
      'v0',
      'k0',
      'k1',
    ]);
    const s = readVarScalars(scalars);
    requireRank('mc_var', 'portfolio', args.portfolio!, 1);
    requireRank('mc_var', 'losses', args.losses!, 1);
    if (args.portfolio!.shape[0] !== packedLength(s.assets, s.positions)) {
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `mc_var: portfolio must hold ${packedLength(s.assets, s.positions)} values for ${s.assets} assets and ${s.positions} positions`,
      );
    }
    for (const n of ['portfolio', 'losses']) {
      const dt = args[n]!.dtype;
      if (dt !== 'f32' && dt !== 'f64')
        throw new TandemError('TANDEM_ERR_DTYPE', `mc_var: ${n} must be f32 or f64, got ${dt}`);
    }
  },
  cost(args, scalars) {
    const n = args.losses!.shape[0]!;
    const d = Number(scalars.assets ?? 1);
    const np = Number(scalars.positions ?? 1);
    return { flops: n * (d * d + 60 * d + 80 * np), bytes: n * 4 };
  },
};
