/**
 * Shape rules of the ONNX kernels (docs/onnx-kernels.md), shared by their validation, their backends
 * and the ONNX executor (which allocates outputs with them), so none of them can disagree on a shape.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';

export const MAX_RANK = 6;

function shapeError(op: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_SHAPE', `${op}: ${message}`, { op });
}

function argError(op: string, scalar: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "${scalar}" ${message}`, {
    op,
    scalar,
  });
}

/** An integer list given as a string scalar ("1,2,-1"; "" is empty); `fallback` when the scalar is absent. */
export function intList(op: string, scalars: Scalars, name: string, fallback?: readonly number[]): number[] {
  const v = scalars[name];
  if (v === undefined && fallback !== undefined) return [...fallback];
  if (typeof v !== 'string') throw argError(op, name, `must be a string of comma-separated integers`);
  if (v.trim() === '') return [];
  return v.split(',').map((part) => {
    const n = Number(part.trim());
    if (part.trim() === '' || !Number.isSafeInteger(n)) {
      throw argError(op, name, `must be comma-separated integers, got ${JSON.stringify(v)}`);
    }
    return n;
  });
}

/** A list of exactly `length` integers, each ≥ `min`. */
export function fixedIntList(
  op: string,
  scalars: Scalars,
  name: string,
  length: number,
  min: number,
  fallback: readonly number[],
): number[] {
  const list = intList(op, scalars, name, fallback);
  if (list.length !== length || list.some((v) => v < min)) {
    throw argError(op, name, `must be ${length} integers ≥ ${min}, got "${list.join(',')}"`);
  }
  return list;
}

/** Normalizes a possibly negative axis for a tensor of `rank`. */
export function normalizeAxis(op: string, axis: number, rank: number, scalar = 'axis'): number {
  if (!Number.isInteger(axis) || axis < -rank || axis >= Math.max(rank, 1)) {
    throw argError(op, scalar, `${axis} is out of range for rank ${rank}`);
  }
  return axis < 0 ? axis + rank : axis;
}

export function requireRank(op: string, name: string, shape: readonly number[], min: number, max = MAX_RANK) {
  if (shape.length < min || shape.length > max) {
    throw shapeError(op, `${name} has rank ${shape.length}, expected ${min}..${max}`);
  }
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function requireShape(op: string, name: string, got: readonly number[], want: readonly number[]) {
  if (!sameShape(got, want))
    throw shapeError(op, `${name} is [${got.join(',')}], expected [${want.join(',')}]`);
}

/** numpy's multidirectional broadcasting of two shapes. */
export function broadcastShape(op: string, a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw shapeError(op, `shapes [${a.join(',')}] and [${b.join(',')}] do not broadcast`);
    }
    out.push(da === 1 ? db : da);
  }
  return out;
}

/** Row-major element strides of a contiguous tensor. */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i]!;
  }
  return strides;
}

/** Strides that read `shape` as broadcast to `out` (0 on broadcast axes), aligned to out's rank. */
export function broadcastStrides(shape: readonly number[], out: readonly number[]): number[] {
  const own = contiguousStrides(shape);
  const lead = out.length - shape.length;
  return out.map((_, i) => (i < lead || shape[i - lead] === 1 ? 0 : own[i - lead]!));
}

/** Geometry of a 2-d windowed op (conv, conv transpose, pool), attributes in ONNX's order. */
export interface Window2d {
  readonly kh: number;
  readonly kw: number;
  readonly sh: number;
  readonly sw: number;
  readonly dh: number;
  readonly dw: number;
  /** top, left, bottom, right */
  readonly pads: readonly [number, number, number, number];
}

export function window2d(op: string, scalars: Scalars, kh: number, kw: number): Window2d {
  const [sh, sw] = fixedIntList(op, scalars, 'strides', 2, 1, [1, 1]) as [number, number];
  const [dh, dw] = fixedIntList(op, scalars, 'dilations', 2, 1, [1, 1]) as [number, number];
  const pads = fixedIntList(op, scalars, 'pads', 4, 0, [0, 0, 0, 0]) as [number, number, number, number];
  return { kh, kw, sh, sw, dh, dw, pads };
}

/** Conv / pool output extent along one axis (floor or ceil mode, ONNX Runtime's ceil rule). */
export function windowExtent(
  size: number,
  kernel: number,
  stride: number,
  dilation: number,
  padBegin: number,
  padEnd: number,
  ceil = false,
): number {
  const span = size + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  let out = (ceil ? Math.ceil(span / stride) : Math.floor(span / stride)) + 1;
  // A last window that would start inside the end padding is dropped (PyTorch, ONNX Runtime).
  if (ceil && (out - 1) * stride >= size + padBegin) out--;
  return out;
}

export function convOutputShape(
  op: string,
  x: readonly number[],
  w: readonly number[],
  g: Window2d,
): number[] {
  const ho = windowExtent(x[2]!, g.kh, g.sh, g.dh, g.pads[0], g.pads[2]);
  const wo = windowExtent(x[3]!, g.kw, g.sw, g.dw, g.pads[1], g.pads[3]);
  if (ho < 1 || wo < 1) throw shapeError(op, `the output would be ${ho}x${wo}`);
  return [x[0]!, w[0]!, ho, wo];
}

export function poolOutputShape(op: string, x: readonly number[], g: Window2d, ceil: boolean): number[] {
  const ho = windowExtent(x[2]!, g.kh, g.sh, g.dh, g.pads[0], g.pads[2], ceil);
  const wo = windowExtent(x[3]!, g.kw, g.sw, g.dw, g.pads[1], g.pads[3], ceil);
  if (ho < 1 || wo < 1) throw shapeError(op, `the output would be ${ho}x${wo}`);
  return [x[0]!, x[1]!, ho, wo];
}

/** ConvTranspose's output: [N, (O/g)·g, sh·(H−1) + outputPadding + dh·(kh−1) + 1 − pads, …]. */
export function convTransposeOutputShape(
  op: string,
  x: readonly number[],
  w: readonly number[],
  group: number,
  g: Window2d,
  outputPadding: readonly number[],
): number[] {
  const ho = g.sh * (x[2]! - 1) + outputPadding[0]! + g.dh * (g.kh - 1) + 1 - g.pads[0] - g.pads[2];
  const wo = g.sw * (x[3]! - 1) + outputPadding[1]! + g.dw * (g.kw - 1) + 1 - g.pads[1] - g.pads[3];
  if (ho < 1 || wo < 1) throw shapeError(op, `the output would be ${ho}x${wo}`);
  return [x[0]!, w[1]! * group, ho, wo];
}

/**
 * auto_pad SAME_UPPER / SAME_LOWER / VALID as explicit pads "top,left,bottom,right" for a conv or pool
 * over [H, W] (ONNX's rule: output = ⌈in/stride⌉, the odd pad goes to the end for SAME_UPPER).
 */
export function resolveAutoPad(
  autoPad: 'SAME_UPPER' | 'SAME_LOWER' | 'VALID',
  spatial: readonly [number, number],
  kernel: readonly [number, number],
  strides: readonly [number, number],
  dilations: readonly [number, number] = [1, 1],
): [number, number, number, number] {
  if (autoPad === 'VALID') return [0, 0, 0, 0];
  const begin: number[] = [];
  const end: number[] = [];
  for (let i = 0; i < 2; i++) {
    const out = Math.ceil(spatial[i]! / strides[i]!);
    const total = Math.max(0, (out - 1) * strides[i]! + dilations[i]! * (kernel[i]! - 1) + 1 - spatial[i]!);
    const small = Math.floor(total / 2);
    begin.push(autoPad === 'SAME_UPPER' ? small : total - small);
    end.push(autoPad === 'SAME_UPPER' ? total - small : small);
  }
  return [begin[0]!, begin[1]!, end[0]!, end[1]!];
}

/** A normalized slice: per axis of x, the first index, the step and the count taken. */
export interface SliceGeometry {
  readonly starts: number[];
  readonly steps: number[];
  readonly shape: number[];
}

/** ONNX Slice's clamping rules (negative starts/ends count from the end; steps may be negative). */
export function sliceGeometry(op: string, x: readonly number[], scalars: Scalars): SliceGeometry {
  const rank = x.length;
  const starts = intList(op, scalars, 'starts');
  const ends = intList(op, scalars, 'ends');
  const axes = intList(
    op,
    scalars,
    'axes',
    starts.map((_, i) => i),
  );
  const steps = intList(
    op,
    scalars,
    'steps',
    starts.map(() => 1),
  );
  if (ends.length !== starts.length || axes.length !== starts.length || steps.length !== starts.length) {
    throw argError(op, 'starts', 'starts, ends, axes and steps must have the same length');
  }
  const geo: SliceGeometry = { starts: x.map(() => 0), steps: x.map(() => 1), shape: [...x] };
  const seen = new Set<number>();
  axes.forEach((a, i) => {
    const axis = normalizeAxis(op, a, rank, 'axes');
    if (seen.has(axis)) throw argError(op, 'axes', `repeats axis ${axis}`);
    seen.add(axis);
    const dim = x[axis]!;
    const step = steps[i]!;
    if (step === 0) throw argError(op, 'steps', 'must not contain 0');
    const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v < 0 ? v + dim : v, lo), hi);
    const start = step > 0 ? clamp(starts[i]!, 0, dim) : clamp(starts[i]!, 0, dim - 1);
    const end = step > 0 ? clamp(ends[i]!, 0, dim) : clamp(ends[i]!, -1, dim - 1);
    // ends beyond −dim with a negative step mean "through index 0": clamp leaves −1 for them.
    const count =
      step > 0 ? Math.max(0, Math.ceil((end - start) / step)) : Math.max(0, Math.ceil((start - end) / -step));
    geo.starts[axis] = start;
    geo.steps[axis] = step;
    geo.shape[axis] = count;
  });
  return geo;
}

/** The shape after reducing `axes` (normalized, sorted), with or without kept 1s. */
export function reduceAxes(op: string, rank: number, scalars: Scalars): number[] | null {
  const axes = intList(op, scalars, 'axes', []);
  const noop = scalars['noopWithEmptyAxes'] === true;
  if (axes.length === 0) return noop ? null : Array.from({ length: rank }, (_, i) => i);
  const set = new Set(axes.map((a) => normalizeAxis(op, a, rank, 'axes')));
  if (set.size !== axes.length) throw argError(op, 'axes', 'repeats an axis');
  return [...set].sort((a, b) => a - b);
}

export function reduceOutputShape(
  x: readonly number[],
  axes: readonly number[] | null,
  keepdims: boolean,
): number[] {
  if (axes === null) return [...x];
  if (keepdims) return x.map((d, i) => (axes.includes(i) ? 1 : d));
  return x.filter((_, i) => !axes.includes(i));
}
