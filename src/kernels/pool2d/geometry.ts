/**
 * pool2d's rules (NCHW, PyTorch's MaxPool2d / AvgPool2d with ceil_mode false): a square window of
 * `kernel`, `stride` (default kernel), `padding` (default 0, at most kernel/2 as PyTorch requires, so
 * every window holds at least one element of x); Ho = ⌊(H + 2·padding − kernel)/stride⌋ + 1 ≥ 1.
 * max ignores the padding and picks the first maximum in row-major window order (NaN propagates);
 * avg divides by kernel² (padding counts as zeros: count_include_pad).
 */
import { TandemError } from '../../core/errors.js';
import { type Shape, shapeStr } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { enumScalar, intScalar } from '../common/scalars.js';
import { requireRank } from '../common/validate.js';
import { outputExtent } from '../conv2d/geometry.js';

export const POOL_OPS = ['max', 'avg'] as const;
export type PoolOp = (typeof POOL_OPS)[number];
export const POOL_SCALARS = ['op', 'kernel', 'stride', 'padding'] as const;

export interface PoolGeometry {
  readonly op: PoolOp;
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly kernel: number;
  readonly stride: number;
  readonly padding: number;
  readonly ho: number;
  readonly wo: number;
}

function invalid(op: string, message: string, details: Record<string, unknown>): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: ${message}`, { op, ...details });
}

/** The scalars, checked: op, kernel ≥ 1 (required), stride ≥ 1, 0 ≤ padding ≤ kernel/2. */
export function poolScalars(
  name: string,
  scalars: Scalars,
): { op: PoolOp; kernel: number; stride: number; padding: number } {
  const op = enumScalar(name, scalars, 'op', POOL_OPS);
  const kernel = intScalar(name, scalars, 'kernel');
  if (kernel < 1) throw invalid(name, `kernel must be at least 1, got ${kernel}`, { kernel });
  const stride = intScalar(name, scalars, 'stride', kernel);
  if (stride < 1) throw invalid(name, `stride must be at least 1, got ${stride}`, { stride });
  const padding = intScalar(name, scalars, 'padding', 0);
  if (padding < 0 || 2 * padding > kernel) {
    throw invalid(name, `padding must be between 0 and kernel/2 = ${kernel / 2}, got ${padding}`, {
      padding,
      kernel,
    });
  }
  return { op, kernel, stride, padding };
}

/** The geometry of a call from x's shape (no checks beyond the scalars'). */
export function poolGeometry(x: Shape, scalars: Scalars, name = 'pool2d'): PoolGeometry {
  const s = poolScalars(name, scalars);
  const [n, c, h, w] = x as [number, number, number, number];
  return {
    ...s,
    n,
    c,
    h,
    w,
    ho: outputExtent(h, s.kernel, s.stride, s.padding),
    wo: outputExtent(w, s.kernel, s.stride, s.padding),
  };
}

/** x rank 4 and an output of at least 1x1. */
export function checkPoolShapes(name: string, x: TensorDesc, scalars: Scalars): PoolGeometry {
  requireRank(name, 'x', x, 4);
  const g = poolGeometry(x.shape, scalars, name);
  if (g.ho < 1 || g.wo < 1) {
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${name}: the output would be ${g.ho}x${g.wo}: a ${g.kernel}x${g.kernel} window does not fit x ${shapeStr(x.shape)} with padding ${g.padding}, stride ${g.stride}`,
      { op: name, x: x.shape, ho: g.ho, wo: g.wo },
    );
  }
  return g;
}
