/**
 * Pieces the CUDA conv programs share (conv-cuda.ts, conv-cuda-tiled.ts): the fused activation and
 * epilogue program as defines and parameters, and the geometry as parameters.
 */
import type { CudaArg, CudaParam } from '../../devices/cuda/kernel-api.js';
import type { Scalars } from '../../devices/device.js';
import { i64Params, idx32 } from './common.js';
import { CONV_EPILOGUE_CONSTANTS, type ConvGeometry, convEpilogue } from './conv.js';
import { mapConstantParams, mapConstantValues, mapCuda } from './map-program.js';

/** The fused activation and epilogue as the defines MAP_CODE / MAP_RESULT (map-program.ts). */
export function epilogueDefines(op: string, scalars: Scalars) {
  const c = mapCuda(convEpilogue(op, scalars));
  return { MAP_CODE: c.code, MAP_RESULT: c.result };
}
export function epilogueParamList(op: string, scalars: Scalars): CudaParam[] {
  return mapConstantValues(convEpilogue(op, scalars), CONV_EPILOGUE_CONSTANTS).map((value): CudaParam => ({
    kind: 'f64',
    value,
  }));
}
export const EPILOGUE_PARAMS = mapConstantParams(CONV_EPILOGUE_CONSTANTS);
export const STORE_ACTIVATED = `{
    X_c m0 = s;
    MAP_CODE
    stX(y, i, MAP_RESULT);
  }`;

/**
 * Direct kernels: the kernel window as compile-time loop bounds (FKH, FKW: unrolled taps), and 32-bit
 * output index arithmetic when the output has fewer than 2^31 elements.
 */
export function directDefines(g: ConvGeometry) {
  return { FKH: g.kh, FKW: g.kw, IDX32: idx32(g.n * g.o * g.ho * g.wo) };
}

/** The geometry as i64 parameters, in the order GEOMETRY_PARAMS declares them. */
export function geometryParams(g: ConvGeometry): CudaParam[] {
  return i64Params([
    g.n,
    g.c,
    g.h,
    g.w,
    g.o,
    g.cg,
    g.og,
    g.ho,
    g.wo,
    g.kh,
    g.kw,
    g.sh,
    g.sw,
    g.dh,
    g.dw,
    g.pads[0],
    g.pads[1],
  ]);
}
export const GEOMETRY_PARAMS = `long long N, long long C, long long H, long long W, long long O, long long CG, long long OG,
    long long HO, long long WO, long long KH, long long KW, long long SH, long long SW, long long DH, long long DW,
    long long PT, long long PL`;

export function descsOf(args: readonly { desc: CudaArg['desc'] }[]) {
  return { x: args[0]!.desc, w: args[1]!.desc, b: args[2]!.desc, y: args[3]!.desc };
}
