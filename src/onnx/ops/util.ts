/** Shape arithmetic and index helpers shared by the ONNX operators' inference and float64 evaluation. */
import { TandemError } from '../../core/errors.js';
import { hostTensor, numelOf, type ElemType, type HostTensor } from '../host-tensor.js';
import type { OpCall, ValueMeta } from './types.js';

export function fail(
  c: OpCall,
  message: string,
  code:
    | 'TANDEM_ERR_SHAPE'
    | 'TANDEM_ERR_DTYPE'
    | 'TANDEM_ERR_BAD_DATA'
    | 'TANDEM_ERR_UNSUPPORTED' = 'TANDEM_ERR_SHAPE',
): TandemError {
  return new TandemError(code, `onnx: ${c.node.opType} node '${c.node.name}': ${message}`, {
    op: c.node.opType,
    node: c.node.name,
    ...(code === 'TANDEM_ERR_BAD_DATA' ? { reason: 'node' } : {}),
  });
}

export function inp(c: OpCall, i: number): ValueMeta {
  const v = c.inputs[i];
  if (!v) throw fail(c, `input ${i} is required`, 'TANDEM_ERR_BAD_DATA');
  return v;
}

export function stridesOf(dims: readonly number[]): number[] {
  const s = new Array<number>(dims.length);
  let k = 1;
  for (let i = dims.length - 1; i >= 0; i--) {
    s[i] = k;
    k *= dims[i]!;
  }
  return s;
}

export function normAxis(c: OpCall, axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(a) || a < 0 || a >= Math.max(rank, 1))
    throw fail(c, `axis ${axis} is out of range for rank ${rank}`);
  return a;
}

export function broadcastDims(c: OpCall, a: readonly number[], b: readonly number[]): number[] {
  const r = Math.max(a.length, b.length);
  const out = new Array<number>(r);
  for (let i = 0; i < r; i++) {
    const x = a[a.length - r + i] ?? 1;
    const y = b[b.length - r + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1)
      throw fail(c, `shapes [${a.join(', ')}] and [${b.join(', ')}] do not broadcast`);
    out[i] = x === 1 ? y : x;
  }
  return out;
}

/** Values of `t` read broadcast to `dims` (numpy rules), as a new array in row-major order. */
export function broadcastTo(t: HostTensor, dims: readonly number[]): Float64Array {
  const n = numelOf(dims);
  const r = dims.length;
  const src = t.dims;
  const ss = stridesOf(src);
  const bs = dims.map((_, i) => {
    const k = i - (r - src.length);
    return k < 0 || src[k] === 1 ? 0 : ss[k]!;
  });
  const out = new Float64Array(n);
  const idx = new Array<number>(r).fill(0);
  let off = 0;
  for (let e = 0; e < n; e++) {
    out[e] = t.data[off]!;
    for (let d = r - 1; d >= 0; d--) {
      idx[d]!++;
      off += bs[d]!;
      if (idx[d]! < dims[d]!) break;
      off -= bs[d]! * idx[d]!;
      idx[d] = 0;
    }
  }
  return out;
}

/** Integer list of a host-known input (shape, axes, pads ...). */
export function hostInts(c: OpCall, i: number, what: string): number[] {
  const v = c.inputs[i];
  if (!v) throw fail(c, `input ${i} (${what}) is required`, 'TANDEM_ERR_BAD_DATA');
  if (!v.host)
    throw fail(
      c,
      `input ${i} (${what}) must be known before the run (a constant, or computed from shapes only)`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  return Array.from(v.host.data);
}

export function optHostInts(c: OpCall, i: number, what: string): number[] | undefined {
  return c.inputs[i] ? hostInts(c, i, what) : undefined;
}

export function make(type: ElemType, dims: readonly number[], data: ArrayLike<number>): HostTensor {
  return hostTensor(type, dims, data);
}

export function same(c: OpCall, i = 0): { type: ElemType; dims: readonly number[] } {
  const v = inp(c, i);
  return { type: v.type, dims: v.dims };
}
