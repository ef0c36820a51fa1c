/**
 * Element-wise operators: the activations (onnx_unary), the broadcasting arithmetic (onnx_binary,
 * n-ary Sum/Max/Min/Mean chained pairwise), Clip, Cast, and the comparisons / logic / Where that
 * appear on shape paths (host only: no kernel, so a graph that needs them on device data is refused).
 */
import { roundTo, type ElemType } from '../host-tensor.js';
import { broadcastDims, broadcastTo, fail, inp, make, same } from './util.js';
import { IDENTITY_OPS } from './identity.js';
import { type Scalars, UNARY, type UnarySpec } from './unary-table.js';
import type { LowerTarget, OpCall, OpImpl } from './types.js';

/** The onnx_unary op and scalars of an activation node, when it is one a convolution can fuse. */
export function activationOf(c: OpCall): Record<string, number | string> | undefined {
  const spec = UNARY[c.node.opType];
  if (!spec || spec.kernel || c.node.opType === 'Dropout' || c.node.opType === 'Identity') return undefined;
  if (c.node.opType === 'Clip' && c.opset >= 11 && [1, 2].some((i) => c.inputs[i] && !c.inputs[i]!.host))
    return undefined;
  return { op: spec.kernelOp, ...spec.scalars(c) };
}

function unaryImpl(spec: UnarySpec, floatOnly: boolean): OpImpl {
  return {
    hostInputs: [],
    infer: (c) => {
      const s = same(c);
      if (floatOnly && !['float', 'double', 'float16', 'bfloat16'].includes(s.type))
        throw fail(c, `element type ${s.type} is not supported`, 'TANDEM_ERR_DTYPE');
      return [s];
    },
    evaluate: (c, x) => {
      const f = spec.f(c);
      const t = x[0]!;
      return [
        make(
          t.type,
          t.dims,
          t.data.map((v) => roundTo(t.type, f(v))),
        ),
      ];
    },
    lower: (c, t) => {
      t.submit(
        spec.kernel ?? 'onnx_unary',
        { x: t.input(0), y: t.output(0) },
        { op: spec.kernelOp, ...spec.scalars(c) },
      );
    },
  };
}

/** The two-operand ops onnx_binary runs, with its op for each (fuse.ts fuses these into map programs). */
export const BINARY_KERNEL_OPS = {
  Add: 'add',
  Sub: 'sub',
  Mul: 'mul',
  Div: 'div',
  Pow: 'pow',
  Max: 'max',
  Min: 'min',
} as const;

/** Those, and the n-ary Sum and Mean (chained pairwise onnx_binary adds). */
const BINARY_KERNEL: Record<string, string> = { ...BINARY_KERNEL_OPS, Sum: 'add', Mean: 'add' };

function intDiv(a: number, b: number): number {
  return Math.trunc(a / b);
}

const BINARY_F: Record<string, (a: number, b: number) => number> = {
  Add: (a, b) => a + b,
  Sub: (a, b) => a - b,
  Mul: (a, b) => a * b,
  Div: (a, b) => a / b,
  Pow: Math.pow,
  Max: (a, b) => (a !== a || b !== b ? NaN : Math.max(a, b)),
  Min: (a, b) => (a !== a || b !== b ? NaN : Math.min(a, b)),
  Sum: (a, b) => a + b,
  Mean: (a, b) => a + b,
  Equal: (a, b) => +(a === b),
  Less: (a, b) => +(a < b),
  LessOrEqual: (a, b) => +(a <= b),
  Greater: (a, b) => +(a > b),
  GreaterOrEqual: (a, b) => +(a >= b),
  And: (a, b) => +(a !== 0 && b !== 0),
  Or: (a, b) => +(a !== 0 || b !== 0),
  Xor: (a, b) => +((a !== 0) !== (b !== 0)),
  Mod: (a, b) => a - b * Math.floor(a / b),
  // BitShift (unsigned integers only, like Mod's integer form evaluated on the host): RIGHT by default
  // here, LEFT chosen from the direction attribute below; the result wraps to the type's width.
  BitShift: (a, b) => Math.floor(a / 2 ** b),
};

const BOOL_OUT = new Set(['Equal', 'Less', 'LessOrEqual', 'Greater', 'GreaterOrEqual', 'And', 'Or', 'Xor']);

function naryDims(c: OpCall): readonly number[] {
  let dims = inp(c, 0).dims;
  for (let i = 1; i < c.inputs.length; i++) dims = broadcastDims(c, dims, inp(c, i).dims);
  return dims;
}

/** The comparisons and logic ops onnx_compare runs (bool results: u8 on device). */
const COMPARE_KERNEL: Record<string, string> = {
  Equal: 'equal',
  Less: 'less',
  LessOrEqual: 'less_equal',
  Greater: 'greater',
  GreaterOrEqual: 'greater_equal',
  And: 'and',
  Or: 'or',
  Xor: 'xor',
};

function compareLower(c: OpCall, t: LowerTarget): void {
  const [a, b] = [t.input(0), t.input(1)];
  if (a.dtype !== b.dtype)
    throw fail(c, `operands of device dtypes ${a.dtype} and ${b.dtype} differ`, 'TANDEM_ERR_UNSUPPORTED');
  t.submit('onnx_compare', { a, b, c: t.output(0) }, { op: COMPARE_KERNEL[c.node.opType]! });
}

function hostBinary(op: string): OpImpl {
  return { ...binaryImplOf(op), lower: undefined };
}

function binaryImpl(op: string): OpImpl {
  if (COMPARE_KERNEL[op]) return { ...hostBinary(op), lower: compareLower };
  return binaryImplOf(op);
}

/**
 * Pow with an integer base (its result type): both operands cast to f64 (exact for every i32), the
 * power there, and the cast back truncating toward zero as numpy's astype does.
 */
function lowerIntPow(c: OpCall, t: LowerTarget): void {
  const f64 = { dtype: 'f64' as const };
  const [a, b] = [0, 1].map((i) => {
    const x = t.input(i);
    const y = t.scratch(x.shape, f64);
    t.submit('cast', { x, y });
    return y;
  });
  const p = t.scratch(naryDims(c), f64);
  t.submit('onnx_binary', { a: a!, b: b!, c: p }, { op: 'pow' });
  t.submit('cast', { x: p, y: t.output(0) });
}

function binaryImplOf(op: string): OpImpl {
  const kernelOp = BINARY_KERNEL[op];
  return {
    infer: (c) => [{ type: BOOL_OUT.has(op) ? 'bool' : inp(c, 0).type, dims: naryDims(c) }],
    evaluate: (c, x) => {
      const dims = naryDims(c);
      const type: ElemType = BOOL_OUT.has(op) ? 'bool' : x[0]!.type;
      const isInt = !['float', 'double', 'float16', 'bfloat16', 'bool'].includes(x[0]!.type);
      let f = BINARY_F[op]!;
      if (op === 'Div' && isInt) f = intDiv;
      if (op === 'Mod' && c.attrs.int('fmod', 0) === 1) f = (a, b) => a % b;
      if (op === 'BitShift') {
        const dir = c.attrs.string('direction', '');
        if (dir !== 'LEFT' && dir !== 'RIGHT')
          throw fail(c, `direction '${dir}' is not LEFT or RIGHT`, 'TANDEM_ERR_BAD_DATA');
        if (dir === 'LEFT') f = (a, b) => a * 2 ** b;
      }
      const acc = broadcastTo(x[0]!, dims);
      for (let i = 1; i < x.length; i++) {
        const b = broadcastTo(x[i]!, dims);
        for (let e = 0; e < acc.length; e++) acc[e] = f(acc[e]!, b[e]!);
      }
      if (op === 'Mean') for (let e = 0; e < acc.length; e++) acc[e] = acc[e]! / x.length;
      return [
        make(
          type,
          dims,
          acc.map((v) => roundTo(type, v)),
        ),
      ];
    },
    lower:
      kernelOp === undefined
        ? undefined
        : (c, t, outs) => {
            const n = c.inputs.length;
            if (n === 1) return t.submit('copy', { x: t.input(0), y: t.output(0) });
            const y = t.output(0);
            if (op === 'Pow' && (y.dtype === 'i32' || y.dtype === 'u8')) return lowerIntPow(c, t);
            if (y.dtype !== 'f32' && y.dtype !== 'f64' && y.dtype !== 'f16' && y.dtype !== 'bf16') {
              throw fail(
                c,
                `integer ${op} on device data is not supported (only on values known before the run)`,
                'TANDEM_ERR_UNSUPPORTED',
              );
            }
            // Mixed operand types (Pow's integer exponent): cast to the output's dtype first.
            const operand = (i: number) => {
              const x = t.input(i);
              if (x.dtype === y.dtype) return x;
              const cast = t.scratch(x.shape, y);
              t.submit('cast', { x, y: cast });
              return cast;
            };
            // Pairwise left to right; intermediate results broadcast as far as the inputs so far.
            let acc = operand(0);
            let dims = inp(c, 0).dims;
            for (let i = 1; i < n; i++) {
              dims = broadcastDims(c, dims, inp(c, i).dims);
              const last = i === n - 1 && op !== 'Mean';
              const out = last ? y : t.scratch(dims, y);
              t.submit('onnx_binary', { a: acc, b: operand(i), c: out }, { op: kernelOp });
              acc = out;
            }
            if (op === 'Mean') {
              const k = t.scratch([], t.output(0));
              t.submit('fill', { y: k }, { value: 1 / n });
              t.submit('onnx_binary', { a: acc, b: k, c: t.output(0) }, { op: 'mul' });
            }
            void outs;
          },
  };
}

const CAST_TO: Record<number, ElemType> = {
  1: 'float',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  9: 'bool',
  10: 'float16',
  11: 'double',
  12: 'uint32',
  13: 'uint64',
  16: 'bfloat16',
};

/** CastLike: Cast to the element type of the second input. */
const castLikeImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 1).type, dims: inp(c, 0).dims }],
  evaluate: (_c, x) => [
    make(
      x[1]!.type,
      x[0]!.dims,
      x[0]!.data.map((v) => roundTo(x[1]!.type, v)),
    ),
  ],
  lower: (_c, t) => {
    const [x, y] = [t.input(0), t.output(0)];
    t.submit(x.dtype === y.dtype ? 'copy' : 'cast', { x, y });
  },
};

const castImpl: OpImpl = {
  infer: (c) => {
    const to = CAST_TO[c.attrs.int('to')];
    if (!to) throw fail(c, `Cast to type ${c.attrs.int('to')} is not supported`, 'TANDEM_ERR_UNSUPPORTED');
    return [{ type: to, dims: inp(c, 0).dims }];
  },
  evaluate: (c, x) => {
    const to = CAST_TO[c.attrs.int('to')]!;
    const t = x[0]!;
    return [
      make(
        to,
        t.dims,
        t.data.map((v) => roundTo(to, v)),
      ),
    ];
  },
  lower: (c, t) => {
    // Float → float on device keeps the device dtype chosen for both (f32/f64): a copy or a cast.
    const x = t.input(0);
    const y = t.output(0);
    t.submit(x.dtype === y.dtype ? 'copy' : 'cast', { x, y });
    void c;
  },
};

const whereImpl: OpImpl = {
  infer: (c) => [
    {
      type: inp(c, 1).type,
      dims: broadcastDims(c, broadcastDims(c, inp(c, 0).dims, inp(c, 1).dims), inp(c, 2).dims),
    },
  ],
  evaluate: (c, x) => {
    const dims = broadcastDims(c, broadcastDims(c, x[0]!.dims, x[1]!.dims), x[2]!.dims);
    const [k, a, b] = [broadcastTo(x[0]!, dims), broadcastTo(x[1]!, dims), broadcastTo(x[2]!, dims)];
    return [
      make(
        x[1]!.type,
        dims,
        k.map((v, i) => (v !== 0 ? a[i]! : b[i]!)),
      ),
    ];
  },
  lower: (c, t) => {
    const [x, y] = [t.input(1), t.input(2)];
    if (x.dtype !== y.dtype)
      throw fail(c, `operands of device dtypes ${x.dtype} and ${y.dtype} differ`, 'TANDEM_ERR_UNSUPPORTED');
    t.submit('onnx_where', { cond: t.input(0), x, y, z: t.output(0) });
  },
};

const notImpl: OpImpl = {
  infer: (c) => [same(c)],
  evaluate: (_c, x) => [
    make(
      'bool',
      x[0]!.dims,
      x[0]!.data.map((v) => +(v === 0)),
    ),
  ],
  lower: (_c, t) => {
    // Not x = x xor true.
    const one = t.scratch([], t.output(0));
    t.submit('fill', { y: one }, { value: 1 });
    t.submit('onnx_compare', { a: t.input(0), b: one, c: t.output(0) }, { op: 'xor' });
  },
};

/** IsInf (detect_positive / detect_negative) and IsNaN: bool results, onnx_isinf on device. */
function classifyImpl(op: 'isinf' | 'isnan'): OpImpl {
  const scalars = (c: OpCall): Scalars => ({
    op,
    ...(op === 'isinf'
      ? {
          detectPositive: c.attrs.int('detect_positive', 1) === 1,
          detectNegative: c.attrs.int('detect_negative', 1) === 1,
        }
      : {}),
  });
  const f = (c: OpCall): ((v: number) => number) => {
    const s = scalars(c);
    if (op === 'isnan') return (v) => +(v !== v);
    return (v) =>
      +(
        (s['detectPositive'] === true && v === Infinity) ||
        (s['detectNegative'] === true && v === -Infinity)
      );
  };
  return {
    infer: (c) => [{ type: 'bool', dims: inp(c, 0).dims }],
    evaluate: (c, x) => [make('bool', x[0]!.dims, x[0]!.data.map(f(c)))],
    lower: (c, t) => t.submit('onnx_isinf', { x: t.input(0), y: t.output(0) }, scalars(c)),
  };
}

/**
 * Floor, Ceil, Sign: onnx_unary on float data; integer values (computed sizes on shape paths) only on
 * the host.
 */
function roundingUnary(kernelOp: string, f: (x: number) => number): OpImpl {
  return {
    infer: (c) => [same(c)],
    evaluate: (_c, x) => [
      make(
        x[0]!.type,
        x[0]!.dims,
        x[0]!.data.map((v) => roundTo(x[0]!.type, f(v))),
      ),
    ],
    lower: (c, t) => {
      const y = t.output(0);
      if (y.dtype !== 'f32' && y.dtype !== 'f64' && y.dtype !== 'f16' && y.dtype !== 'bf16')
        throw fail(c, `integer ${c.node.opType} on device data is not supported`, 'TANDEM_ERR_UNSUPPORTED');
      t.submit('onnx_unary', { x: t.input(0), y }, { op: kernelOp });
    },
  };
}

export const ELEMENTWISE_OPS: Record<string, OpImpl> = {
  ...Object.fromEntries(
    Object.entries(UNARY).map(([k, v]) => [k, unaryImpl(v, k !== 'Identity' && k !== 'Dropout')]),
  ),
  ...Object.fromEntries(Object.keys(BINARY_F).map((k) => [k, binaryImpl(k)])),
  ...IDENTITY_OPS,
  Cast: castImpl,
  CastLike: castLikeImpl,
  Where: whereImpl,
  Not: notImpl,
  IsInf: classifyImpl('isinf'),
  IsNaN: classifyImpl('isnan'),
  Floor: roundingUnary('floor', Math.floor),
  Ceil: roundingUnary('ceil', Math.ceil),
  Sign: roundingUnary('sign', Math.sign),
};
