/** 2-D convolution and pooling over NCHW values (PyTorch's Conv2d with groups 1, MaxPool2d/AvgPool2d). */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import type { Var } from '../var.js';
import { requireShape } from './shapes.js';
import { jointTargets, overwriteTarget } from '../grad-routing.js';

function outSize(op: string, size: number, k: number, stride: number, padding: number): number {
  const o = Math.floor((size + 2 * padding - k) / stride) + 1;
  if (!(o >= 1))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: a ${k}-wide window does not fit ${size} (padding ${padding})`,
    );
  return o;
}

function requireNchw(op: string, x: Var): [number, number, number, number] {
  if (x.shape.length !== 4)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `${op}: x must be [batch, channels, height, width], got rank ${x.shape.length}`,
    );
  return x.shape as [number, number, number, number];
}

export interface ConvOptions {
  readonly stride?: number;
  readonly padding?: number;
}

export function conv2d(nn: Nn, x: Var, w: Var, b: Var, { stride = 1, padding = 0 }: ConvOptions = {}): Var {
  const [n, c, h, wd] = requireNchw('conv2d', x);
  if (w.shape.length !== 4 || w.shape[1] !== c)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `conv2d: w must be [out, ${c}, kh, kw], got [${w.shape.join(', ')}]`,
    );
  const [o, , kh, kw] = w.shape as [number, number, number, number];
  requireShape('conv2d', 'b', b, [o]);
  const y = nn.tensor([
    n,
    o,
    outSize('conv2d', h, kh, stride, padding),
    outSize('conv2d', wd, kw, stride, padding),
  ]);
  const scalars = { stride, padding };
  nn.submit('conv2d', { x: x.data, w: w.data, b: b.data, y }, scalars);
  return nn.result(y, [x, w, b], (g) => {
    const j = jointTargets(nn, [
      { v: w, shape: w.shape, dtype: w.dtype },
      { v: b, shape: b.shape, dtype: b.dtype },
    ]);
    const dx = overwriteTarget(nn, x);
    nn.submit(
      'conv2d_backward',
      { dy: g, x: x.data, w: w.data, dx: dx.tensor, dw: j.tensors[0]!, db: j.tensors[1]! },
      { ...scalars, accumulate: j.accumulate },
    );
    j.finish();
    dx.finish();
  });
}

export interface PoolOptions {
  readonly kernel: number;
  readonly stride?: number;
  readonly padding?: number;
}

export function pool2d(
  nn: Nn,
  x: Var,
  op: 'max' | 'avg',
  { kernel, stride = kernel, padding = 0 }: PoolOptions,
): Var {
  const [n, c, h, w] = requireNchw('pool2d', x);
  const y = nn.tensor([
    n,
    c,
    outSize('pool2d', h, kernel, stride, padding),
    outSize('pool2d', w, kernel, stride, padding),
  ]);
  const scalars = { op, kernel, stride, padding };
  nn.submit('pool2d', { x: x.data, y }, scalars);
  return nn.result(y, [x], (g) => {
    if (!x.requiresGrad) return;
    const dx = overwriteTarget(nn, x);
    nn.submit('pool2d_backward', { x: x.data, dy: g, dx: dx.tensor }, scalars);
    dx.finish();
  });
}
