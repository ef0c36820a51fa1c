/**
 * onnx_map: y = program(x) element by element (map-program.ts), one read and one write for a whole
 * chain of element-wise ONNX nodes. CUDA compiles one kernel per program shape (the program's text
 * with its numbers replaced by K0…K15 is in the source, the numbers are parameters).
 */
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import type { CudaProgram } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { forFloatChunks } from '../common/cpu-float.js';
import { BLOCK_DIM, GRID_STRIDE, MATH_OVERLOADS, count, elementwiseGrid } from '../common/cuda.js';
import type { ReferenceFn } from '../common/reference.js';
import { TandemError } from '../../core/errors.js';
import { FLOAT_DTYPES, onnxDef, requireDTypes, streamCost } from './common.js';
import { UNARY_CUDA_HELPERS } from './elementwise-ops.js';
import {
  MAX_MAP_CONSTANTS,
  type MapProgram,
  mapConstantParams,
  mapConstantValues,
  mapCuda,
  mapArray,
  mapFunc,
  parseMapProgram,
} from './map-program.js';
import { requireShape } from './shapes.js';

/** The program of an onnx_map call (scalar `program`; onnx_conv's `epilogue`), empty when absent. */
export function mapProgramOf(op: string, scalars: Scalars, name = 'program'): MapProgram {
  const v = scalars[name] ?? '';
  if (typeof v !== 'string')
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "${name}" must be a program string`, {
      op,
      scalar: name,
    });
  return parseMapProgram(op, v);
}

export const onnxMapDef = onnxDef(
  'onnx_map',
  [
    ['x', 'r'],
    ['y', 'w'],
  ],
  ['program'],
  (args, scalars) => {
    mapProgramOf('onnx_map', scalars);
    requireDTypes('onnx_map', args, ['x', 'y'], FLOAT_DTYPES);
    requireShape('onnx_map', 'y', args.y!.shape, args.x!.shape);
  },
  (args, scalars) => streamCost(args, Math.max(1, mapProgramOf('onnx_map', scalars).instrs.length)),
);

export const onnxMapReference: ReferenceFn = (args, scalars) => ({
  y: args.x!.values.map(mapFunc(mapProgramOf('onnx_map', scalars))),
});

export const onnxMapCpu: CpuKernel = (args, scalars) => {
  const p = mapProgramOf('onnx_map', scalars);
  forFloatChunks(args, [true, false], [false, true], ([x, y], n) => mapArray(p, x!, y!, n));
};

export const onnxMapCuda: CudaProgram = {
  kind: 'program',
  entry: 'tdm_onnx_map',
  source: `${MATH_OVERLOADS}${UNARY_CUDA_HELPERS}
extern "C" __global__ void tdm_onnx_map(const X_t* __restrict__ x, X_t* __restrict__ y, long long n,
    ${mapConstantParams(MAX_MAP_CONSTANTS)}) {
  ${GRID_STRIDE} {
    X_c m0 = ldX(x, i);
    MAP_CODE
    stX(y, i, MAP_RESULT);
  }
}`,
  dtypes: (args) => ({ X: args[0]!.desc.dtype }),
  defines: (_args, scalars) => {
    const c = mapCuda(mapProgramOf('onnx_map', scalars));
    return { MAP_CODE: c.code, MAP_RESULT: c.result };
  },
  grid: (args) => elementwiseGrid(count(args[0]!)),
  block: () => BLOCK_DIM,
  params: (args, scalars) => [
    { kind: 'ptr', arg: 0 },
    { kind: 'ptr', arg: 1 },
    { kind: 'i64', value: count(args[0]!) },
    ...mapConstantValues(mapProgramOf('onnx_map', scalars), MAX_MAP_CONSTANTS).map((value) => ({
      kind: 'f64' as const,
      value,
    })),
  ],
};
