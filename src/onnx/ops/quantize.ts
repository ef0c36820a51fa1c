/**
 * The quantization operators, composed from existing kernels:
 *   - QuantizeLinear: saturate(round(x / scale) + zero_point) with onnx_binary, onnx_unary round (half
 *     to even) and clip, then a cast to the integer dtype (uint8 → u8, int8/16 → i32 on the device);
 *   - DequantizeLinear: (x − zero_point)·scale after casting both to the scale's float dtype;
 *   - DynamicQuantizeLinear: the uint8 scale and zero point from onnx_reduce min/max (ONNX's function
 *     body), then QuantizeLinear's steps;
 *   - MatMulInteger / ConvInteger: the operands minus their zero points in f64 (every int32 exact), one
 *     onnx_matmul / onnx_conv there, and the cast to int32;
 *   - QLinearMatMul / QLinearConv: the same integer product, times a_scale·b_scale / y_scale, then
 *     QuantizeLinear's rounding and saturation.
 * Scales and zero points are tensors (per tensor, or per axis as 1-d), so they may be computed during
 * the run (DynamicQuantizeLinear's outputs feeding a QuantizeLinear). Blocked quantization (opset 21's
 * block_size) is refused as unsupported.
 */
import type { DType } from '../../core/dtype.js';
import type { Tensor } from '../../memory/tensor.js';
import { roundHalfEven } from '../../kernels/onnx/elementwise-ops.js';
import { numelOf, roundTo, type ElemType, type HostTensor } from '../host-tensor.js';
import { convEval, convOut, submitConv } from './conv.js';
import { MATH_OPS } from './math.js';
import { broadcastTo, fail, inp, make, normAxis } from './util.js';
import type { LowerTarget, OpCall, OpImpl, ValueMeta } from './types.js';

const RANGE: Partial<Record<ElemType, [number, number]>> = {
  uint8: [0, 255],
  int8: [-128, 127],
  uint16: [0, 65535],
  int16: [-32768, 32767],
};

function rangeOf(c: OpCall, type: ElemType): [number, number] {
  const r = RANGE[type];
  if (!r)
    throw fail(
      c,
      `quantized type ${type} (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, zero point) is not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  return r;
}

/** The dims a scale or zero point broadcasts from: [] per tensor, all 1 but `axis` per axis. */
function paramDims(c: OpCall, i: number, xRank: number): number[] {
  const v = c.inputs[i];
  if (!v || numelOf(v.dims) === 1) return [];
  if (c.attrs.int('block_size', 0) !== 0)
    throw fail(
      c,
      `blocked quantization (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, attribute block_size) is not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  if (v.dims.length !== 1) throw fail(c, `input ${i} must be a scalar or 1-d, got [${v.dims.join(', ')}]`);
  const axis = normAxis(c, c.attrs.int('axis', 1), xRank);
  return Array.from({ length: xRank }, (_, d) => (d === axis ? v.dims[0]! : 1));
}

/** Host value of input i read broadcast to `dims` (0 for an absent zero point). */
function hostParam(c: OpCall, x: ReadonlyArray<HostTensor | undefined>, i: number, dims: readonly number[]) {
  const v = x[i];
  if (!v) return new Float64Array(numelOf(dims));
  return broadcastTo({ ...v, dims: paramDims(c, i, dims.length) }, dims);
}

const quantizeType = (z: ValueMeta | undefined): ElemType => z?.type ?? 'uint8';

/** round(v) + zp (v already divided by the scale), clamped to the type's range. */
function quantizeValue(c: OpCall, type: ElemType, v: number, zp: number): number {
  const [lo, hi] = rangeOf(c, type);
  return Math.min(Math.max(roundHalfEven(v) + zp, lo), hi);
}

/** Device operations on float tensors of one dtype. */
class Q {
  constructor(
    readonly t: LowerTarget,
    readonly dtype: DType,
  ) {}
  /** Input i cast to the float dtype, viewed with `dims` (a scale or zero point's broadcast view). */
  float(v: Tensor, dims?: readonly number[]): Tensor {
    let y = v;
    if (v.dtype !== this.dtype) {
      y = this.t.scratch(v.shape, { dtype: this.dtype });
      this.t.submit('cast', { x: v, y: y });
    }
    if (!dims || dims.join() === y.shape.join()) return y;
    const r = this.t.scratch(dims, y);
    this.t.submit('copy', { x: y, y: r });
    return r;
  }
  binary(op: string, a: Tensor, b: Tensor, dims: readonly number[]): Tensor {
    const c = this.t.scratch(dims, { dtype: this.dtype });
    this.t.submit('onnx_binary', { a, b, c }, { op });
    return c;
  }
  /** round(v) + zp, clipped to the type's range, cast into y. */
  store(c: OpCall, v: Tensor, zp: Tensor | undefined, type: ElemType, y: Tensor): void {
    const [lo, hi] = rangeOf(c, type);
    let r = this.t.scratch(v.shape, v);
    this.t.submit('onnx_unary', { x: v, y: r }, { op: 'round' });
    if (zp) r = this.binary('add', r, zp, v.shape);
    const clipped = this.t.scratch(v.shape, v);
    this.t.submit('onnx_unary', { x: r, y: clipped }, { op: 'clip', min: lo, max: hi });
    this.t.submit('cast', { x: clipped, y });
  }
}

// ---- QuantizeLinear / DequantizeLinear

const quantizeImpl: OpImpl = {
  infer: (c) => {
    const type = quantizeType(c.inputs[2]);
    rangeOf(c, type);
    paramDims(c, 1, inp(c, 0).dims.length);
    return [{ type, dims: inp(c, 0).dims }];
  },
  evaluate: (c, x) => {
    const dims = x[0]!.dims;
    const type = quantizeType(c.inputs[2]);
    const [s, z] = [hostParam(c, x, 1, dims), hostParam(c, x, 2, dims)];
    // x / scale in the input's precision (float32 for float), as the kernels divide.
    const r = (v: number) => roundTo(x[0]!.type, v);
    return [
      make(
        type,
        dims,
        Array.from(x[0]!.data, (v, e) => quantizeValue(c, type, r(v / s[e]!), z[e]!)),
      ),
    ];
  },
  lower: (c, t) => {
    const x = t.input(0);
    const q = new Q(t, x.dtype);
    const pd = paramDims(c, 1, x.shape.length);
    const scaled = q.binary('div', x, q.float(t.input(1), pd), x.shape);
    const zp = c.inputs[2] ? q.float(t.input(2), pd) : undefined;
    q.store(c, scaled, zp, quantizeType(c.inputs[2]), t.output(0));
  },
};

const dequantizeImpl: OpImpl = {
  infer: (c) => {
    paramDims(c, 1, inp(c, 0).dims.length);
    return [{ type: inp(c, 1).type, dims: inp(c, 0).dims }];
  },
  evaluate: (c, x) => {
    const dims = x[0]!.dims;
    const type = x[1]!.type;
    const [s, z] = [hostParam(c, x, 1, dims), hostParam(c, x, 2, dims)];
    return [
      make(
        type,
        dims,
        Array.from(x[0]!.data, (v, e) => roundTo(type, (v - z[e]!) * s[e]!)),
      ),
    ];
  },
  lower: (c, t) => {
    const y = t.output(0);
    const q = new Q(t, y.dtype);
    const pd = paramDims(c, 1, y.shape.length);
    let v = q.float(t.input(0));
    if (c.inputs[2]) v = q.binary('sub', v, q.float(t.input(2), pd), y.shape);
    t.submit('onnx_binary', { a: v, b: q.float(t.input(1), pd), c: y }, { op: 'mul' });
  },
};

// ---- DynamicQuantizeLinear

/** ONNX's function body: the range widened to hold 0, scale = range/255, zp = round(clip(−min/scale)). */
function dynamicParams(x: HostTensor): { scale: number; zp: number } {
  let [mn, mx] = [0, 0];
  for (const v of x.data) [mn, mx] = [Math.min(mn, v), Math.max(mx, v)];
  const scale = Math.fround((mx - mn) / 255);
  const zp = roundHalfEven(Math.min(Math.max(0 - Math.fround(mn / scale), 0), 255));
  return { scale, zp };
}

const dynamicQuantizeImpl: OpImpl = {
  infer: (c) => {
    const dims = inp(c, 0).dims;
    return [
      { type: 'uint8', dims },
      { type: 'float', dims: [] },
      { type: 'uint8', dims: [] },
    ];
  },
  evaluate: (c, x) => {
    const { scale, zp } = dynamicParams(x[0]!);
    const y = Array.from(x[0]!.data, (v) => quantizeValue(c, 'uint8', Math.fround(v / scale), zp));
    return [make('uint8', x[0]!.dims, y), make('float', [], [scale]), make('uint8', [], [zp])];
  },
  lower: (c, t) => {
    const x = t.input(0);
    const q = new Q(t, x.dtype);
    const scalar = (op: string) => {
      const r = t.scratch([], x);
      t.submit('onnx_reduce', { x, y: r }, { op, axes: '', keepdims: false });
      return r;
    };
    const zero = t.scratch([], x);
    t.submit('fill', { y: zero }, { value: 0 });
    const mn = q.binary('min', scalar('min'), zero, []);
    const mx = q.binary('max', scalar('max'), zero, []);
    const k255 = t.scratch([], x);
    t.submit('fill', { y: k255 }, { value: 255 });
    const wanted = (i: number) => (c.node.outputs[i] ?? '') !== '';
    const scale = wanted(1) && x.dtype === t.output(1).dtype ? t.output(1) : t.scratch([], x);
    t.submit('onnx_binary', { a: q.binary('sub', mx, mn, []), b: k255, c: scale }, { op: 'div' });
    if (wanted(1) && scale !== t.output(1)) t.submit('cast', { x: scale, y: t.output(1) });
    // zero point = round(clip(0 − min/scale, 0, 255)), kept as a float for the quantization below.
    const negMin = q.binary('sub', zero, q.binary('div', mn, scale, []), []);
    const clipped = t.scratch([], x);
    t.submit('onnx_unary', { x: negMin, y: clipped }, { op: 'clip', min: 0, max: 255 });
    const zp = t.scratch([], x);
    t.submit('onnx_unary', { x: clipped, y: zp }, { op: 'round' });
    if (wanted(2)) t.submit('cast', { x: zp, y: t.output(2) });
    const yOut = wanted(0) ? t.output(0) : t.scratch(x.shape, { dtype: 'u8' });
    q.store(c, q.binary('div', x, scale, x.shape), zp, 'uint8', yOut);
  },
};

// ---- MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv

interface IntProduct {
  readonly kind: 'matmul' | 'conv';
  /** Node input indices of a, its zero point, b, its zero point. */
  readonly at: readonly [number, number, number, number];
  /** QLinear*: indices of a_scale, b_scale, y_scale, y_zero_point, and the bias (QLinearConv). */
  readonly q?: readonly [number, number, number, number, number?];
}

/** The node seen as its float operation: MatMul / Conv on inputs (a, b[, bias]). */
function asFloatCall(c: OpCall, p: IntProduct): OpCall {
  const [a, , b] = p.at;
  const bias = p.q?.[4];
  return { ...c, inputs: [c.inputs[a], c.inputs[b], ...(bias !== undefined ? [c.inputs[bias]] : [])] };
}

function productDims(c: OpCall, p: IntProduct): number[] {
  const f = asFloatCall(c, p);
  if (p.kind === 'conv') return convOut({ ...f, inputs: f.inputs.slice(0, 2) });
  if (inp(f, 0).dims.length < 2 || inp(f, 1).dims.length < 2)
    throw fail(c, 'operands of rank 1 are not supported', 'TANDEM_ERR_UNSUPPORTED');
  return [...MATH_OPS.MatMul!.infer(f)[0]!.dims];
}

/** Zero point dims for operand a (per row: [M, 1]) or b (per column / output channel). */
function zpDims(c: OpCall, p: IntProduct, which: 0 | 1): number[] {
  const zi = p.at[which === 0 ? 1 : 3];
  const v = c.inputs[zi];
  const x = inp(c, p.at[which === 0 ? 0 : 2]).dims;
  if (!v || numelOf(v.dims) === 1) return [];
  if (p.kind === 'matmul') {
    if (v.dims.length !== 1)
      throw fail(c, 'zero points of rank > 1 are not supported', 'TANDEM_ERR_UNSUPPORTED');
    return which === 0 ? [v.dims[0]!, 1] : [v.dims[0]!];
  }
  // ConvInteger / QLinearConv: w's zero point per output channel.
  if (which === 1) return [x[0]!, ...x.slice(1).map(() => 1)];
  throw fail(c, `a per-channel input zero point is not supported`, 'TANDEM_ERR_UNSUPPORTED');
}

function productImpl(p: IntProduct): OpImpl {
  const outType = (c: OpCall): ElemType => (p.q ? quantizeType(c.inputs[p.q[3]]) : 'int32');
  return {
    infer: (c) => {
      if (p.q) rangeOf(c, outType(c));
      zpDims(c, p, 0);
      zpDims(c, p, 1);
      return [{ type: outType(c), dims: productDims(c, p) }];
    },
    evaluate: (c, x) => {
      const [ia, iza, ib, izb] = p.at;
      const minus = (v: number, zi: number, w: 0 | 1): HostTensor => {
        const t = x[v]!;
        const z = x[zi]
          ? broadcastTo({ ...x[zi]!, dims: zpDims(c, p, w) }, t.dims)
          : new Float64Array(t.data.length);
        return { type: 'double', dims: t.dims, data: t.data.map((e, k) => e - z[k]!) };
      };
      const [a, b] = [minus(ia, iza, 0), minus(ib, izb, 1)];
      const f = asFloatCall(c, p);
      let prod: HostTensor;
      if (p.kind === 'conv') prod = convEval(f, a, b, p.q?.[4] !== undefined ? x[p.q[4]] : undefined);
      else prod = MATH_OPS.MatMul!.evaluate(f, [a, b])[0]!;
      if (!p.q)
        return [
          make(
            'int32',
            prod.dims,
            prod.data.map((v) => roundTo('int32', v)),
          ),
        ];
      const [as, bs, ys, yz] = p.q;
      const dims = prod.dims;
      // The output channel axis of b's scale: 1 for a conv's [N, M, …], the last for a matmul.
      const inner = numelOf(dims.slice(2));
      const last = dims[dims.length - 1]!;
      const channel = (e: number) => (p.kind === 'conv' ? Math.floor(e / inner) % dims[1]! : e % last);
      const bScale = (e: number) => x[bs]!.data[numelOf(x[bs]!.dims) === 1 ? 0 : channel(e)]!;
      const type = outType(c);
      const z = x[yz] ? x[yz].data[0]! : 0;
      const scaled = (v: number, e: number) => (v * x[as]!.data[0]! * bScale(e)) / x[ys]!.data[0]!;
      return [
        make(
          type,
          dims,
          Array.from(prod.data, (v, e) => quantizeValue(c, type, scaled(v, e), z)),
        ),
      ];
    },
    lower: (c, t) => lowerProduct(c, t, p, outType(c)),
  };
}

function lowerProduct(c: OpCall, t: LowerTarget, p: IntProduct, type: ElemType): void {
  const q = new Q(t, 'f64');
  const [ia, iza, ib, izb] = p.at;
  const operand = (i: number, zi: number, w: 0 | 1) => {
    const v = q.float(t.input(i));
    return c.inputs[zi] ? q.binary('sub', v, q.float(t.input(zi), zpDims(c, p, w)), v.shape) : v;
  };
  const [a, b] = [operand(ia, iza, 0), operand(ib, izb, 1)];
  const y = t.output(0);
  const prod = t.scratch(y.shape, { dtype: 'f64' });
  if (p.kind === 'matmul') t.submit('onnx_matmul', { a, b, c: prod });
  else {
    const bias = t.scratch([b.shape[0]!], prod);
    if (p.q?.[4] !== undefined && c.inputs[p.q[4]]) t.submit('cast', { x: t.input(p.q[4]), y: bias });
    else t.submit('fill', { y: bias }, { value: 0 });
    submitConv(asFloatCall(c, p), t, a, b, bias, prod);
  }
  if (!p.q) return t.submit('cast', { x: prod, y });
  const [as, bs, ys, yz] = p.q;
  // Per-output-channel b scale: [M] for a conv's [N, M, …] (axis 1), [N] (last axis) for a matmul.
  const bDims =
    numelOf(inp(c, bs).dims) === 1
      ? []
      : p.kind === 'conv'
        ? [inp(c, bs).dims[0]!, ...y.shape.slice(2).map(() => 1)]
        : [inp(c, bs).dims[0]!];
  const factor = q.binary(
    'div',
    q.binary('mul', q.float(t.input(as), []), q.float(t.input(bs), bDims), bDims),
    q.float(t.input(ys), []),
    bDims,
  );
  const scaled = q.binary('mul', prod, factor, y.shape);
  q.store(c, scaled, c.inputs[yz] ? q.float(t.input(yz), []) : undefined, type, y);
}

export const QUANTIZE_OPS: Record<string, OpImpl> = {
  QuantizeLinear: quantizeImpl,
  DequantizeLinear: dequantizeImpl,
  DynamicQuantizeLinear: dynamicQuantizeImpl,
  MatMulInteger: productImpl({ kind: 'matmul', at: [0, 2, 1, 3] }),
  ConvInteger: productImpl({ kind: 'conv', at: [0, 2, 1, 3] }),
  QLinearMatMul: productImpl({ kind: 'matmul', at: [0, 2, 3, 5], q: [1, 4, 6, 7] }),
  QLinearConv: productImpl({ kind: 'conv', at: [0, 2, 3, 5], q: [1, 4, 6, 7, 8] }),
};
