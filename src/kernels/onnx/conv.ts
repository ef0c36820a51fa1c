/**
 * onnx_conv and onnx_conv_transpose: ONNX's 2-d Conv (groups, dilations, asymmetric pads, strides) and
 * ConvTranspose. Definitions and float64 references; CPU in conv-cpu.ts, CUDA in conv-cuda.ts.
 */
import { TandemError } from '../../core/errors.js';
import type { Scalars } from '../../devices/device.js';
import type { ReferenceFn } from '../common/reference.js';
import { enumScalar, intScalar } from '../common/scalars.js';
import { type ArgDescs, FLOAT_DTYPES, onnxDef, requireDTypes } from './common.js';
import { ACTIVATION_SCALARS, activationParams } from './elementwise-ops.js';
import { mapProgramOf } from './map.js';
import { type MapProgram, afterActivation, mapConstants, mapFunc } from './map-program.js';
import {
  convOutputShape,
  convTransposeOutputShape,
  fixedIntList,
  requireRank,
  requireShape,
  type Window2d,
  window2d,
} from './shapes.js';

/** Everything a conv kernel indexes with. For ConvTranspose c/h/w are x's and o/ho/wo y's as well. */
export interface ConvGeometry extends Window2d {
  readonly n: number;
  readonly c: number;
  readonly h: number;
  readonly w: number;
  readonly o: number;
  readonly group: number;
  /** Input channels per group. */
  readonly cg: number;
  /** Output channels per group. */
  readonly og: number;
  readonly ho: number;
  readonly wo: number;
}

const CONV_SCALARS = ['group', 'strides', 'pads', 'dilations', ...ACTIVATION_SCALARS, 'epilogue'];

/** onnx_conv's GEMM precision on CUDA: 'tf32' (f32 only) runs its GEMMs on tensor cores. */
export function convPrecision(scalars: Scalars): 'default' | 'tf32' {
  return enumScalar('onnx_conv', scalars, 'precision', ['default', 'tf32'] as const, 'default');
}

/** Constants a conv's activation and epilogue may use together (CUDA kernel parameters). */
export const CONV_EPILOGUE_CONSTANTS = 8;

/**
 * What a conv applies to each output before its store: the activation scalars' op, then the
 * `epilogue` program (map-program.ts) on its result.
 */
const epilogues = new Map<string, MapProgram>();
export function convEpilogue(op: string, scalars: Scalars): MapProgram {
  const key = [op, ...ACTIVATION_SCALARS.map((k) => String(scalars[k])), String(scalars['epilogue'])].join(
    '|',
  );
  return memo(epilogues, key, () => checkConvEpilogue(op, scalars));
}

function checkConvEpilogue(op: string, scalars: Scalars): MapProgram {
  const p = afterActivation(activationParams(scalars), mapProgramOf(op, scalars, 'epilogue'));
  if (mapConstants(p).length > CONV_EPILOGUE_CONSTANTS) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${op}: the activation and epilogue use more than ${CONV_EPILOGUE_CONSTANTS} distinct constants`,
      { op, scalar: 'epilogue' },
    );
  }
  return p;
}

function groupOf(op: string, scalars: Scalars): number {
  const group = intScalar(op, scalars, 'group', 1);
  if (group < 1) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: scalar "group" must be ≥ 1`, {
      op,
      scalar: 'group',
    });
  }
  return group;
}

function shapeError(op: string, message: string): TandemError {
  return new TandemError('TANDEM_ERR_SHAPE', `${op}: ${message}`, { op });
}

/**
 * Results of the checks below by their inputs: they run several times per launch (validation, grid,
 * parameters, defines) and parsing the attribute strings each time cost ~40 µs per call, most of a
 * conv task's host time. Only successful checks are kept; a bad call is checked (and fails) again.
 */
const MEMO_LIMIT = 4096;
function memo<T>(cache: Map<string, T>, key: string, make: () => T): T {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const v = make();
  if (cache.size >= MEMO_LIMIT) cache.clear();
  cache.set(key, v);
  return v;
}
const geometries = new Map<string, ConvGeometry>();
function geometryKey(op: string, args: ArgDescs, scalars: Scalars, extra: readonly string[]): string {
  const str = (v: unknown) => (v === undefined ? '' : String(v));
  return [
    op,
    args.x?.shape.join(','),
    args.w?.shape.join(','),
    args.b?.shape.join(','),
    args.y?.shape.join(','),
    ...['group', 'strides', 'pads', 'dilations', ...extra].map((k) => str(scalars[k])),
  ].join('|');
}

/** The last geometry per scalars object and descriptors (one task's several calls: no key to build). */
const lastGeometry = new WeakMap<Scalars, { args: readonly unknown[]; g: ConvGeometry }>();
function sameDescs(a: readonly unknown[], args: ArgDescs): boolean {
  return a[0] === args.x && a[1] === args.w && a[2] === args.b && a[3] === args.y;
}

/** Checks a conv call and returns its geometry (x [N,C,H,W], w [O,C/g,kh,kw], b [O], y). */
export function convGeometry(op: string, args: ArgDescs, scalars: Scalars): ConvGeometry {
  const last = lastGeometry.get(scalars);
  if (last && sameDescs(last.args, args) && op === 'onnx_conv') return last.g;
  const g = memo(geometries, geometryKey(op, args, scalars, []), () => checkConvGeometry(op, args, scalars));
  if (op === 'onnx_conv') lastGeometry.set(scalars, { args: [args.x, args.w, args.b, args.y], g });
  return g;
}

function checkConvGeometry(op: string, args: ArgDescs, scalars: Scalars): ConvGeometry {
  for (const name of ['x', 'w', 'y']) requireRank(op, name, args[name]!.shape, 4, 4);
  const [n, c, h, w] = args.x!.shape as [number, number, number, number];
  const [o, cg, kh, kw] = args.w!.shape as [number, number, number, number];
  const group = groupOf(op, scalars);
  if (c % group !== 0 || o % group !== 0 || cg !== c / group) {
    throw shapeError(
      op,
      `x has ${c} channels, w is [${o},${cg},…], group ${group}: need C = ${cg}·group and O % group = 0`,
    );
  }
  const win = window2d(op, scalars, kh, kw);
  const y = convOutputShape(op, args.x!.shape, args.w!.shape, win);
  requireShape(op, 'y', args.y!.shape, y);
  requireShape(op, 'b', args.b!.shape, [o]);
  return { ...win, n, c, h, w, o, group, cg, og: o / group, ho: y[2]!, wo: y[3]! };
}

/** Checks a conv-transpose call (x [N,C,H,W], w [C,O/g,kh,kw], b [O], y) and returns its geometry. */
export function convTransposeGeometry(op: string, args: ArgDescs, scalars: Scalars): ConvGeometry {
  return memo(geometries, geometryKey(`${op}:t`, args, scalars, ['outputPadding']), () =>
    checkConvTransposeGeometry(op, args, scalars),
  );
}

function checkConvTransposeGeometry(op: string, args: ArgDescs, scalars: Scalars): ConvGeometry {
  for (const name of ['x', 'w', 'y']) requireRank(op, name, args[name]!.shape, 4, 4);
  const [n, c, h, w] = args.x!.shape as [number, number, number, number];
  const [wc, og, kh, kw] = args.w!.shape as [number, number, number, number];
  const group = groupOf(op, scalars);
  if (wc !== c || c % group !== 0) {
    throw shapeError(
      op,
      `x has ${c} channels, w is [${wc},${og},…], group ${group}: need w[0] = C and C % group = 0`,
    );
  }
  const win = window2d(op, scalars, kh, kw);
  const outputPadding = fixedIntList(op, scalars, 'outputPadding', 2, 0, [0, 0]);
  const y = convTransposeOutputShape(op, args.x!.shape, args.w!.shape, group, win, outputPadding);
  requireShape(op, 'y', args.y!.shape, y);
  requireShape(op, 'b', args.b!.shape, [y[1]!]);
  return { ...win, n, c, h, w, o: y[1]!, group, cg: c / group, og, ho: y[2]!, wo: y[3]! };
}

const CONV_ARGS = [
  ['x', 'r'],
  ['w', 'r'],
  ['b', 'r'],
  ['y', 'w'],
] as const;

export const onnxConvDef = onnxDef(
  'onnx_conv',
  CONV_ARGS,
  [...CONV_SCALARS, 'precision'],
  (args, scalars) => {
    requireDTypes('onnx_conv', args, ['x', 'w', 'b', 'y'], FLOAT_DTYPES);
    convGeometry('onnx_conv', args, scalars);
    convEpilogue('onnx_conv', scalars);
    convPrecision(scalars);
  },
  (args, scalars) => convCost(convGeometry('onnx_conv', args, scalars), args),
);

export const onnxConvTransposeDef = onnxDef(
  'onnx_conv_transpose',
  CONV_ARGS,
  [...CONV_SCALARS, 'outputPadding'],
  (args, scalars) => {
    requireDTypes('onnx_conv_transpose', args, ['x', 'w', 'b', 'y'], FLOAT_DTYPES);
    convTransposeGeometry('onnx_conv_transpose', args, scalars);
    convEpilogue('onnx_conv_transpose', scalars);
  },
  (args, scalars) => convCost(convTransposeGeometry('onnx_conv_transpose', args, scalars), args),
);

function convCost(g: ConvGeometry, args: ArgDescs) {
  const flops = 2 * g.n * g.o * g.ho * g.wo * g.cg * g.kh * g.kw;
  return { flops, bytes: args.x!.bytes + args.w!.bytes + args.b!.bytes + args.y!.bytes };
}

/** y[n,o,oh,ow] = b[o] + Σ x[n, gi·cg + ci, oh·sh − top + i·dh, ow·sw − left + j·dw]·w[o, ci, i, j]. */
export const onnxConvReference: ReferenceFn = (args, scalars) => {
  const descs = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, v.desc]));
  const g = convGeometry('onnx_conv', descs, scalars);
  const [x, w, b] = [args.x!.values, args.w!.values, args.b!.values];
  const y = new Float64Array(g.n * g.o * g.ho * g.wo);
  let at = 0;
  for (let n = 0; n < g.n; n++)
    for (let o = 0; o < g.o; o++) {
      const c0 = Math.floor(o / g.og) * g.cg;
      for (let oh = 0; oh < g.ho; oh++)
        for (let ow = 0; ow < g.wo; ow++) {
          let s = b[o]!;
          for (let ci = 0; ci < g.cg; ci++)
            for (let i = 0; i < g.kh; i++) {
              const ih = oh * g.sh - g.pads[0] + i * g.dh;
              if (ih < 0 || ih >= g.h) continue;
              for (let j = 0; j < g.kw; j++) {
                const iw = ow * g.sw - g.pads[1] + j * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                s +=
                  x[((n * g.c + c0 + ci) * g.h + ih) * g.w + iw]! *
                  w[((o * g.cg + ci) * g.kh + i) * g.kw + j]!;
              }
            }
          y[at++] = s;
        }
    }
  return { y: y.map(mapFunc(convEpilogue('onnx_conv', scalars))) };
};

/**
 * y[n,o,oh,ow] = b[o] + Σ x[n, c, ih, iw]·w[c, o − gi·og, i, j] over the (c, i, j) of o's group with
 * ih·sh + i·dh = oh + top (and alike for w): each input spreads a kernel-sized patch, gathered here.
 */
export const onnxConvTransposeReference: ReferenceFn = (args, scalars) => {
  const descs = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, v.desc]));
  const g = convTransposeGeometry('onnx_conv_transpose', descs, scalars);
  const [x, w, b] = [args.x!.values, args.w!.values, args.b!.values];
  const y = new Float64Array(g.n * g.o * g.ho * g.wo);
  let at = 0;
  for (let n = 0; n < g.n; n++)
    for (let o = 0; o < g.o; o++) {
      const gi = Math.floor(o / g.og);
      for (let oh = 0; oh < g.ho; oh++)
        for (let ow = 0; ow < g.wo; ow++) {
          let s = b[o]!;
          for (let ci = 0; ci < g.cg; ci++) {
            const c = gi * g.cg + ci;
            for (let i = 0; i < g.kh; i++) {
              const th = oh + g.pads[0] - i * g.dh;
              if (th < 0 || th % g.sh !== 0 || th / g.sh >= g.h) continue;
              for (let j = 0; j < g.kw; j++) {
                const tw = ow + g.pads[1] - j * g.dw;
                if (tw < 0 || tw % g.sw !== 0 || tw / g.sw >= g.w) continue;
                s +=
                  x[((n * g.c + c) * g.h + th / g.sh) * g.w + tw / g.sw]! *
                  w[((c * g.og + (o - gi * g.og)) * g.kh + i) * g.kw + j]!;
              }
            }
          }
          y[at++] = s;
        }
    }
  return { y: y.map(mapFunc(convEpilogue('onnx_conv_transpose', scalars))) };
};
