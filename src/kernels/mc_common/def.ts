/**
 * The Monte Carlo option ops (mc_european, mc_asian) share one contract: a range of Philox streams
 * [first, first + streams) is priced and the partial sums are written to `out` [rows, 3] as
 * (sum, sum of squares, count) of undiscounted sample payoffs, one row per contiguous slice of the range.
 * Rows let a GPU write one row per block (no atomics, deterministic); the host adds the rows up.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import type { McSpec } from './engine.js';
import type { KernelDef } from '../kernel.js';
import { boolScalar, checkScalarNames, intScalar, numberScalar } from '../common/scalars.js';
import { checkArgNames, requireRank } from '../common/validate.js';

export const MC_SCALARS = [
  'first',
  'streams',
  'samples',
  'steps',
  'spot',
  'strike',
  'mu',
  'sigma',
  'call',
  'antithetic',
  'k0',
  'k1',
] as const;

export interface McKernelScalars {
  first: number;
  streams: number;
  spec: McSpec;
}

export function readMcScalars(op: string, scalars: Scalars): McKernelScalars {
  const k0 = intScalar(op, scalars, 'k0');
  const k1 = intScalar(op, scalars, 'k1');
  return {
    first: intScalar(op, scalars, 'first'),
    streams: intScalar(op, scalars, 'streams'),
    spec: {
      kind: op === 'mc_asian' ? 'asian' : 'european',
      call: boolScalar(op, scalars, 'call', true),
      spot: numberScalar(op, scalars, 'spot'),
      strike: numberScalar(op, scalars, 'strike'),
      mu: numberScalar(op, scalars, 'mu'),
      sigma: numberScalar(op, scalars, 'sigma'),
      steps: intScalar(op, scalars, 'steps', 1),
      antithetic: boolScalar(op, scalars, 'antithetic', false),
      samples: intScalar(op, scalars, 'samples'),
      seed: k0 + k1 * 2 ** 32,
      discount: 1,
    },
  };
}

/** Per-stream work in flops, for the cost model: Philox (~40 int ops) + Box–Muller + exp per path. */
function flopsPerStream(op: string, steps: number, antithetic: boolean): number {
  const perNormal = antithetic ? 16 : 10;
  return op === 'mc_asian' ? steps * (perNormal + 12) : 4 * perNormal + 40;
}

export function makeMcDef(name: 'mc_european' | 'mc_asian'): KernelDef {
  return {
    name,
    args: [{ name: 'out', mode: 'w' }],
    validate(args, scalars) {
      checkArgNames(name, this.args, args);
      checkScalarNames(name, scalars, MC_SCALARS);
      const out = args.out!;
      requireRank(name, 'out', out, 2);
      if (out.shape[1] !== 3 || (out.dtype !== 'f32' && out.dtype !== 'f64')) {
        throw new TandemError('TANDEM_ERR_SHAPE', `${name}: out must be f32 or f64 [rows, 3]`, { op: name });
      }
      const s = readMcScalars(name, scalars);
      if (s.first < 0 || s.streams < 1 || s.spec.samples < 1 || s.spec.steps < 1) {
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `${name}: first >= 0, streams >= 1, samples >= 1, steps >= 1 required`,
          { op: name },
        );
      }
      if (out.shape[0]! > s.streams) {
        throw new TandemError(
          'TANDEM_ERR_SHAPE',
          `${name}: more rows (${out.shape[0]}) than streams (${s.streams})`,
          { op: name },
        );
      }
    },
    cost(_args, scalars) {
      const streams = Number(scalars.streams ?? 1);
      const steps = Number(scalars.steps ?? 1);
      return { flops: streams * flopsPerStream(name, steps, scalars.antithetic === true), bytes: 64 };
    },
  };
}

/**
 * Rows for a range of streams: about 1024 streams a row (4 per thread of a 256-thread GPU block), so a
 * 10^6-path price spreads over ~120 blocks instead of queueing 30 streams behind each thread, up to
 * 4096 rows (2^26 paths: 8 streams a thread). Rows cost the CPU nothing and the host reads 12 bytes each.
 */
export function mcRows(streams: number): number {
  return Math.max(1, Math.min(4096, Math.ceil(streams / 1024), streams));
}

/** Scalars for a stream range of an option spec (the workload builds them; the kernels read them). */
export function mcScalars(spec: McSpec, first: number, streams: number): Record<string, number | boolean> {
  return {
    first,
    streams,
    samples: spec.samples,
    steps: spec.steps,
    spot: spec.spot,
    strike: spec.strike,
    mu: spec.mu,
    sigma: spec.sigma,
    call: spec.call,
    antithetic: spec.antithetic,
    k0: spec.seed % 2 ** 32,
    k1: Math.floor(spec.seed / 2 ** 32),
  };
}
