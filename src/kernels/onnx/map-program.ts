/**
 * Element-wise programs: a straight-line chain of onnx_binary / onnx_unary operations on one tensor
 * and constants, applied in one pass (onnx_map) or in a convolution's store (onnx_conv's `epilogue`).
 * The ONNX executor builds them from runs of element-wise nodes (PaddleOCR's Conv → Mul → Add →
 * hard-swish spelled as Add/Clip/Mul/Div → Mul → Add), so a feature map is written once instead of
 * once per node.
 *
 * Text form (a string scalar): instructions separated by `;`, each `op(a, b, …)`. Register r0 is the
 * input, instruction k (from 1) writes rk, and the result is the last register (r0 for the empty
 * program). Binary ops (BINARY_OPS) take two operands, each a register `rj` (j < k) or a number; unary
 * ops (UNARY_OPS) take a register then their parameters as numbers: leaky_relu(r, alpha),
 * hard_sigmoid(r, alpha, beta), clip(r, min, max), elu(r, alpha); the others none. Numbers are
 * JavaScript's (`1e-5`, `-Infinity`). On CUDA the numbers are kernel parameters (K0…K15), so programs
 * that differ only in constants share one compiled kernel.
 */
import { TandemError } from '../../core/errors.js';
import {
  BINARY_CUDA,
  BINARY_FUNCS,
  BINARY_OPS,
  type BinaryOp,
  UNARY_CUDA,
  UNARY_OPS,
  type UnaryOp,
  type UnaryParams,
  unaryFunc,
} from './elementwise-ops.js';

export type MapOperand = { readonly reg: number } | { readonly value: number };

export interface MapInstr {
  readonly op: BinaryOp | UnaryOp;
  /** Binary: two operands. Unary: one register. */
  readonly args: readonly MapOperand[];
  /** Unary ops' parameters (alpha, beta / min, max). */
  readonly params: readonly number[];
}

export interface MapProgram {
  readonly instrs: readonly MapInstr[];
}

/** Kernel parameters for constants on CUDA; a program needing more is refused. */
export const MAX_MAP_CONSTANTS = 16;
export const MAX_MAP_INSTRS = 32;

/** Parameters each unary op takes, in order. */
export const UNARY_PARAMS: Partial<Record<UnaryOp, readonly string[]>> = {
  leaky_relu: ['alpha'],
  hard_sigmoid: ['alpha', 'beta'],
  clip: ['min', 'max'],
  elu: ['alpha'],
  thresholded_relu: ['alpha'],
  shrink: ['alpha', 'beta'],
};

const isBinary = (op: string): op is BinaryOp => (BINARY_OPS as readonly string[]).includes(op);
const isUnary = (op: string): op is UnaryOp => (UNARY_OPS as readonly string[]).includes(op);

function bad(kernel: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${kernel}: ${message}`, { op: kernel });
}

const parsed = new Map<string, MapProgram>();
/** Parses a program's text (see the header); `kernel` names the op in errors. Kept by text. */
export function parseMapProgram(kernel: string, text: string): MapProgram {
  const hit = parsed.get(text);
  if (hit) return hit;
  const p = parseText(kernel, text);
  if (parsed.size >= 4096) parsed.clear();
  parsed.set(text, p);
  return p;
}

function parseText(kernel: string, text: string): MapProgram {
  const src = text.trim();
  if (src === '') return { instrs: [] };
  const parts = src.split(';').map((s) => s.trim());
  if (parts.length > MAX_MAP_INSTRS)
    throw bad(kernel, `program has ${parts.length} instructions (at most ${MAX_MAP_INSTRS})`);
  const instrs = parts.map((part, i): MapInstr => {
    const m = /^([a-z_]+)\((.*)\)$/.exec(part);
    if (!m) throw bad(kernel, `program instruction ${i + 1} "${part}" is not op(args)`);
    const op = m[1]!;
    const operands = m[2]!.split(',').map((a): MapOperand => {
      const s = a.trim();
      const reg = /^r(\d+)$/.exec(s);
      if (reg) {
        const r = Number(reg[1]);
        if (r > i) throw bad(kernel, `program instruction ${i + 1} reads r${r} before it is written`);
        return { reg: r };
      }
      const value = s === '' ? NaN : Number(s);
      if (Number.isNaN(value)) throw bad(kernel, `program instruction ${i + 1}: "${s}" is not a number`);
      return { value };
    });
    if (isBinary(op)) {
      if (operands.length !== 2) throw bad(kernel, `program: ${op} takes 2 operands`);
      return { op, args: operands, params: [] };
    }
    if (isUnary(op)) {
      const names = UNARY_PARAMS[op] ?? [];
      const [x, ...rest] = operands;
      if (!x || !('reg' in x) || rest.length !== names.length || rest.some((o) => 'reg' in o))
        throw bad(kernel, `program: ${op} takes a register${names.map((n) => `, ${n}`).join('')}`);
      return { op, args: [x], params: rest.map((o) => (o as { value: number }).value) };
    }
    throw bad(kernel, `program instruction ${i + 1}: unknown op "${op}"`);
  });
  const p = { instrs };
  if (mapConstants(p).length > MAX_MAP_CONSTANTS)
    throw bad(kernel, `program uses more than ${MAX_MAP_CONSTANTS} distinct constants`);
  return p;
}

export function formatMapProgram(p: MapProgram): string {
  const operand = (o: MapOperand) => ('reg' in o ? `r${o.reg}` : String(o.value));
  return p.instrs
    .map((ins) => `${ins.op}(${[...ins.args.map(operand), ...ins.params.map(String)].join(',')})`)
    .join(';');
}

/** The program's distinct constants in order of first use (CUDA's K0, K1, …). */
export function mapConstants(p: MapProgram): number[] {
  const out: number[] = [];
  const add = (v: number) => {
    if (!out.some((u) => Object.is(u, v))) out.push(v);
  };
  for (const ins of p.instrs) {
    for (const a of ins.args) if ('value' in a) add(a.value);
    ins.params.forEach(add);
  }
  return out;
}

/** The program as a float64 function (the reference, and the CPU kernels in the working precision). */
export function mapFunc(p: MapProgram): (x: number) => number {
  if (p.instrs.length === 0) return (x) => x;
  const steps = p.instrs.map((ins) => {
    if (isBinary(ins.op)) {
      const f = BINARY_FUNCS[ins.op];
      const [a, b] = ins.args as [MapOperand, MapOperand];
      return (r: Float64Array) => f('reg' in a ? r[a.reg]! : a.value, 'reg' in b ? r[b.reg]! : b.value);
    }
    const names = UNARY_PARAMS[ins.op] ?? [];
    const param = (n: string, dflt: number) => (names.includes(n) ? ins.params[names.indexOf(n)]! : dflt);
    const f = unaryFunc({
      op: ins.op,
      alpha: param('alpha', 0),
      beta: param('beta', 0),
      min: param('min', -Number.MAX_VALUE),
      max: param('max', Number.MAX_VALUE),
    });
    const src = (ins.args[0] as { reg: number }).reg;
    return (r: Float64Array) => f(r[src]!);
  });
  const regs = new Float64Array(steps.length + 1);
  return (x) => {
    regs[0] = x;
    for (let k = 0; k < steps.length; k++) regs[k + 1] = steps[k]!(regs);
    return regs[steps.length]!;
  };
}

/**
 * CUDA: one line of statements computing `X_c m<k>` from `X_c m0` (declared by the caller) in the
 * compute type, constants read from double parameters K0…K15; `result` names the last register.
 */
const cudaCode = new WeakMap<MapProgram, { code: string; result: string }>();
export function mapCuda(p: MapProgram): { code: string; result: string } {
  let c = cudaCode.get(p);
  if (!c) cudaCode.set(p, (c = makeMapCuda(p)));
  return c;
}

function makeMapCuda(p: MapProgram): { code: string; result: string } {
  const consts = mapConstants(p);
  const k = (v: number) => `(X_c)K${consts.findIndex((u) => Object.is(u, v))}`;
  const operand = (o: MapOperand) => ('reg' in o ? `m${o.reg}` : k(o.value));
  const lines = p.instrs.map((ins, i) => {
    const r = `m${i + 1}`;
    if (isBinary(ins.op)) {
      const [a, b] = ins.args as [MapOperand, MapOperand];
      return `X_c ${r}; { X_c p = ${operand(a)}, q = ${operand(b)}; ${r} = ${BINARY_CUDA[ins.op]}; }`;
    }
    const names = UNARY_PARAMS[ins.op] ?? [];
    const param = (n: string, dflt: string) => (names.includes(n) ? k(ins.params[names.indexOf(n)]!) : dflt);
    // The unary expressions name their parameters ALPHA, BETA, LO, HI (onnx_unary's).
    return (
      `X_c ${r}; { X_c v = ${operand(ins.args[0]!)}; const X_c ALPHA = ${param('alpha', '(X_c)0')}, ` +
      `BETA = ${param('beta', '(X_c)0')}, LO = ${param('min', '(X_c)0')}, HI = ${param('max', '(X_c)0')}; ` +
      `(void)ALPHA; (void)BETA; (void)LO; (void)HI; ${r} = ${UNARY_CUDA[ins.op]}; }`
    );
  });
  return { code: lines.join(' '), result: `m${p.instrs.length}` };
}

/** CUDA parameter declarations of `count` constants (K0…), and a program's values padded to `count`. */
export function mapConstantParams(count: number): string {
  return Array.from({ length: count }, (_, i) => `double K${i}`).join(', ');
}
const constantValues = new WeakMap<MapProgram, Map<number, number[]>>();
export function mapConstantValues(p: MapProgram, count: number): number[] {
  let byCount = constantValues.get(p);
  if (!byCount) constantValues.set(p, (byCount = new Map()));
  let v = byCount.get(count);
  if (!v) {
    const c = mapConstants(p);
    v = [...c, ...new Array<number>(Math.max(0, count - c.length)).fill(0)];
    byCount.set(count, v);
  }
  return v;
}

/**
 * The unary activation `act` followed by `then` (whose r0 is the activation's result): the one
 * program a convolution applies before its store. The identity activation adds no instruction.
 */
export function afterActivation(act: UnaryParams, then: MapProgram): MapProgram {
  if (act.op === 'identity') return then;
  const names = UNARY_PARAMS[act.op] ?? [];
  const values: Record<string, number> = { alpha: act.alpha, beta: act.beta, min: act.min, max: act.max };
  const first: MapInstr = { op: act.op, args: [{ reg: 0 }], params: names.map((n) => values[n]!) };
  const shift = (o: MapOperand): MapOperand => ('reg' in o ? { reg: o.reg + 1 } : o);
  return {
    instrs: [first, ...then.instrs.map((ins) => ({ ...ins, args: ins.args.map(shift) }))],
  };
}

const BLOCK = 512;

/**
 * y[i] = program(x[i]) for i < n, instruction by instruction over blocks of 512 elements (tight loops
 * instead of a closure chain per element); x and y may be the same array. Registers are float64, so
 * the values equal mapFunc's; the store rounds to y's type.
 */
export function mapArray(
  p: MapProgram,
  x: Float32Array | Float64Array,
  y: Float32Array | Float64Array,
  n: number,
): void {
  if (p.instrs.length === 0) {
    if (x !== y) y.set(x.subarray(0, n));
    return;
  }
  const regs = Array.from({ length: p.instrs.length + 1 }, () => new Float64Array(BLOCK));
  // Each unary op as a function of its operand alone (its register renumbered to the input's).
  const unary = p.instrs.map((ins) =>
    isBinary(ins.op) ? null : mapFunc({ instrs: [{ ...ins, args: [{ reg: 0 }] }] }),
  );
  const consts = p.instrs.map((ins) =>
    ins.args.map((a) => ('value' in a ? new Float64Array(BLOCK).fill(a.value) : null)),
  );
  for (let start = 0; start < n; start += BLOCK) {
    const len = Math.min(BLOCK, n - start);
    const r0 = regs[0]!;
    for (let j = 0; j < len; j++) r0[j] = x[start + j]!;
    p.instrs.forEach((ins, k) => {
      const out = regs[k + 1]!;
      const src = (i: number) => {
        const a = ins.args[i]!;
        return 'reg' in a ? regs[a.reg]! : consts[k]![i]!;
      };
      const a = src(0);
      switch (ins.op) {
        case 'relu':
          for (let j = 0; j < len; j++) out[j] = a[j]! < 0 ? 0 : a[j]!;
          return;
        case 'add': {
          const b = src(1);
          for (let j = 0; j < len; j++) out[j] = a[j]! + b[j]!;
          return;
        }
        case 'sub': {
          const b = src(1);
          for (let j = 0; j < len; j++) out[j] = a[j]! - b[j]!;
          return;
        }
        case 'mul': {
          const b = src(1);
          for (let j = 0; j < len; j++) out[j] = a[j]! * b[j]!;
          return;
        }
        case 'div': {
          const b = src(1);
          for (let j = 0; j < len; j++) out[j] = a[j]! / b[j]!;
          return;
        }
        case 'clip': {
          const [lo, hi] = ins.params as [number, number];
          for (let j = 0; j < len; j++) {
            const v = a[j]!;
            out[j] = v !== v ? v : v < lo ? lo : v > hi ? hi : v;
          }
          return;
        }
        default: {
          if (isBinary(ins.op)) {
            const f = BINARY_FUNCS[ins.op];
            const b = src(1);
            for (let j = 0; j < len; j++) out[j] = f(a[j]!, b[j]!);
            return;
          }
          const f = unary[k]!;
          for (let j = 0; j < len; j++) out[j] = f(a[j]!);
        }
      }
    });
    const last = regs[p.instrs.length]!;
    for (let j = 0; j < len; j++) y[start + j] = last[j]!;
  }
}
