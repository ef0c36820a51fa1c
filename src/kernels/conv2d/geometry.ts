/**
 * conv2d's shape rules (NCHW, PyTorch's Conv2d with groups 1 and dilation 1), shared by validation,
 * cost, the references and every backend: x [N,C,H,W], w [O,C,kh,kw], y [N,O,Ho,Wo] with
 * Ho = ⌊(H + 2·padding − kh)/stride⌋ + 1 (and Wo alike), which must be at least 1.
 */
import { TandemError } from '../../core/errors.js';
import { type Shape, shapeStr } from '../../core/shape.js';
import type { Scalars, TensorDesc } from '../../devices/device.js';
import { intScalar } from '../common/scalars.js';
import { requireRank } from '../common/validate.js';

export interface ConvGeometry {
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly o: number;
  readonly kh: number;
  readonly kw: number;
  readonly stride: number;
  readonly padding: number;
  readonly ho: number;
  readonly wo: number;
}

/** stride (integer ≥ 1, default 1) and padding (integer ≥ 0, default 0). */
export function convScalars(op: string, scalars: Scalars): { stride: number; padding: number } {
  const stride = intScalar(op, scalars, 'stride', 1);
  const padding = intScalar(op, scalars, 'padding', 0);
  if (stride < 1) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: stride must be at least 1, got ${stride}`, {
      op,
      stride,
    });
  }
  if (padding < 0) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: padding must be at least 0, got ${padding}`,
      {
        op,
        padding,
      },
    );
  }
  return { stride, padding };
}

/** Output extent of one spatial axis: ⌊(size + 2·padding − kernel)/stride⌋ + 1 (may be ≤ 0: checked by callers). */
export function outputExtent(size: number, kernel: number, stride: number, padding: number): number {
  return Math.floor((size + 2 * padding - kernel) / stride) + 1;
}

/** The geometry of a call from the x and w shapes (no checks: the def validated them). */
export function convGeometry(x: Shape, w: Shape, scalars: Scalars, op = 'conv2d'): ConvGeometry {
  const { stride, padding } = convScalars(op, scalars);
  const [n, c, h, wd] = x as [number, number, number, number];
  const [o, , kh, kw] = w as [number, number, number, number];
  return {
    n,
    c,
    h,
    w: wd,
    o,
    kh,
    kw,
    stride,
    padding,
    ho: outputExtent(h, kh, stride, padding),
    wo: outputExtent(wd, kw, stride, padding),
  };
}

function shapeError(op: string, message: string, details: Record<string, unknown>): TandemError {
  return new TandemError('TANDEM_ERR_SHAPE', `${op}: ${message}`, { op, ...details });
}

/** Checks x, w (and b, when given) against each other and returns the geometry (Ho, Wo ≥ 1). */
export function checkConvShapes(
  op: string,
  x: TensorDesc,
  w: TensorDesc,
  b: TensorDesc | undefined,
  scalars: Scalars,
): ConvGeometry {
  requireRank(op, 'x', x, 4);
  requireRank(op, 'w', w, 4);
  const g = convGeometry(x.shape, w.shape, scalars, op);
  if (g.kh < 1 || g.kw < 1) {
    throw shapeError(op, `the kernel must be at least 1x1, w is ${shapeStr(w.shape)}`, { w: w.shape });
  }
  if (w.shape[1] !== g.c) {
    throw shapeError(
      op,
      `w ${shapeStr(w.shape)} has ${w.shape[1]} input channels, x ${shapeStr(x.shape)} has ${g.c}`,
      {
        x: x.shape,
        w: w.shape,
      },
    );
  }
  if (b !== undefined && (b.shape.length !== 1 || b.shape[0] !== g.o)) {
    throw shapeError(op, `b must be [${g.o}] (one bias per output channel), got ${shapeStr(b.shape)}`, {
      b: b.shape,
    });
  }
  if (g.ho < 1 || g.wo < 1) {
    throw shapeError(
      op,
      `the output would be ${g.ho}x${g.wo}: a ${g.kh}x${g.kw} kernel does not fit x ${shapeStr(x.shape)} with padding ${g.padding}, stride ${g.stride}`,
      { x: x.shape, w: w.shape, ho: g.ho, wo: g.wo },
    );
  }
  return g;
}

/** The shape an output tensor must have, as a TANDEM_ERR_SHAPE when it differs. */
export function requireShape(op: string, name: string, desc: TensorDesc, want: Shape): void {
  if (desc.shape.length !== want.length || desc.shape.some((d, i) => d !== want[i])) {
    throw shapeError(op, `${name} must be ${shapeStr(want)}, got ${shapeStr(desc.shape)}`, {
      arg: name,
      shape: desc.shape,
      expected: want,
    });
  }
}
