/**
 * onnx_map programs (map-program.ts) in WGSL, shared by onnx_map and the conv epilogues on WebGPU.
 * The program is compiled into a function `prog(r0: f32) -> f32` whose numbers are uniform fields
 * P.k0…P.k15 (like CUDA's K0…K15), so programs that differ only in their numbers — PaddleOCR's
 * per-layer affine constants — share one pipeline. The uniform block also carries P.inf and P.nan
 * (WGSL has no literals for them; pow needs both). Every unary op has a WGSL form (webgpu.ts, with
 * webgpu-math.ts's functions); an op without one would make the whole program unsupported.
 */
import { numel } from '../../core/shape.js';
import type { UniformWord, WebGpuKernel } from '../../devices/webgpu/kernel-api.js';
import { elementwiseStep, elementwiseWgsl, floatStorage } from '../common/webgpu.js';
import { mapProgramOf } from './map.js';
import {
  type MapOperand,
  type MapProgram,
  mapConstants,
  MAX_MAP_CONSTANTS,
  UNARY_PARAMS,
} from './map-program.js';
import { BINARY_OPS, type BinaryOp, type UnaryOp } from './elementwise-ops.js';
import { BINARY_WGSL, POW_REF, UNARY_WGSL } from './webgpu.js';
import { UNARY_MATH_WGSL } from './webgpu-math.js';

const isBinary = (op: string): op is BinaryOp => (BINARY_OPS as readonly string[]).includes(op);

/** Whether every instruction has a WGSL form. */
export function mapWgslSupported(p: MapProgram): boolean {
  return p.instrs.every((ins) => isBinary(ins.op) || UNARY_WGSL[ins.op] !== undefined);
}

/** Uniform field declarations the program function reads (after the kernel's own fields). */
export const MAP_PARAM_FIELDS: readonly string[] = [
  'inf: f32',
  'nan: f32',
  ...Array.from({ length: MAX_MAP_CONSTANTS }, (_, i) => `k${i}: f32`),
];

/** The words for MAP_PARAM_FIELDS: inf, nan, then the program's distinct numbers padded with 0. */
export function mapParamWords(p: MapProgram): UniformWord[] {
  const c = mapConstants(p);
  return [
    { type: 'f32', value: Infinity },
    { type: 'f32', value: NaN },
    ...Array.from({ length: MAX_MAP_CONSTANTS }, (_, i) => ({ type: 'f32' as const, value: c[i] ?? 0 })),
  ];
}

const UNARY_LOCALS: Readonly<Record<string, string>> = {
  'P.alpha': 'alpha',
  'P.beta': 'beta',
  'P.lo': 'lo',
  'P.hi': 'hi',
};

/**
 * WGSL functions `prog(r0: f32) -> f32` (and pow_ref, which reads P.inf/P.nan) for a program. The
 * text depends on the program's shape only (which constant index each number is), not its values.
 */
export function mapWgsl(p: MapProgram): string {
  const consts = mapConstants(p);
  const k = (v: number) => `P.k${consts.findIndex((u) => Object.is(u, v))}`;
  const operand = (o: MapOperand) => ('reg' in o ? `r${o.reg}` : k(o.value));
  const lines = p.instrs.map((ins, i) => {
    const r = `r${i + 1}`;
    if (isBinary(ins.op)) {
      const [a, b] = ins.args as [MapOperand, MapOperand];
      return `  var ${r}: f32; { let a = ${operand(a)}; let b = ${operand(b)}; ${r} = ${BINARY_WGSL[ins.op]}; }`;
    }
    const names = UNARY_PARAMS[ins.op as UnaryOp] ?? [];
    const param = (n: string) => (names.includes(n) ? k(ins.params[names.indexOf(n)]!) : '0.0');
    const expr = UNARY_WGSL[ins.op as UnaryOp]!.replace(/P\.(alpha|beta|lo|hi)/g, (m) => UNARY_LOCALS[m]!);
    return (
      `  var ${r}: f32; { let x = ${operand(ins.args[0]!)}; let alpha = ${param('alpha')}; ` +
      `let beta = ${param('beta')}; let lo = ${param('min')}; let hi = ${param('max')}; ${r} = ${expr}; }`
    );
  });
  return `${POW_REF}${UNARY_MATH_WGSL}fn prog(r0: f32) -> f32 {
${lines.join('\n')}
  return r${p.instrs.length};
}
`;
}

/** onnx_map on WebGPU: f32 arithmetic on f32, f16 (native or packed) and bf16 (packed) storage. */
export const onnxMapWebGpu: WebGpuKernel = {
  kind: 'webgpu-kernel',
  supports: (args, scalars, f) =>
    args.length === 2 &&
    args[0]!.dtype === args[1]!.dtype &&
    floatStorage(args[0]!.dtype, f) !== undefined &&
    mapWgslSupported(mapProgramOf('onnx_map', scalars)),
  plan(args, scalars, f) {
    const storage = floatStorage(args[0]!.dtype, f)!;
    const p = mapProgramOf('onnx_map', scalars);
    const wgsl = elementwiseWgsl(storage, {
      tensors: [{ name: 'X' }, { name: 'Y', write: true }],
      inputs: ['X'],
      output: 'Y',
      expr: 'prog(x)',
      params: MAP_PARAM_FIELDS,
      helpers: mapWgsl(p),
    });
    return [elementwiseStep(storage, wgsl, numel(args[0]!.shape), [0, 1], mapParamWords(p))];
  },
};
