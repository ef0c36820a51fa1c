/**
 * Resize (opsets 10–21) and Upsample (opset 9): 4-d NCHW, nearest, (bi)linear or (bi)cubic
 * (cubic_coeff_a, exclude_outside), ONNX's coordinate transformations including tf_crop_and_resize
 * (roi from a host-known input, extrapolation_value); lowered onto onnx_resize.
 */
import { numelOf } from '../host-tensor.js';
import { fail, hostInts, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function resizeSpec(c: OpCall) {
  const x = inp(c, 0).dims;
  const upsample = c.node.opType === 'Upsample' || c.opset < 11;
  const scalesIdx = upsample ? 1 : 2;
  let scales =
    c.inputs[scalesIdx] && hostInts(c, scalesIdx, 'scales').length > 0
      ? hostInts(c, scalesIdx, 'scales')
      : undefined;
  const sizes = !upsample && c.inputs[3] ? hostInts(c, 3, 'sizes') : undefined;
  if (!upsample && c.attrs.has('axes'))
    throw fail(c, 'the axes attribute is not supported', 'TANDEM_ERR_UNSUPPORTED');
  let dims: number[];
  if (sizes && sizes.length > 0) {
    if (c.attrs.string('keep_aspect_ratio_policy', 'stretch') !== 'stretch')
      throw fail(c, 'keep_aspect_ratio_policy other than stretch is not supported', 'TANDEM_ERR_UNSUPPORTED');
    dims = sizes;
    scales = undefined;
  } else if (scales) dims = x.map((d, i) => Math.floor(d * scales![i]!));
  else throw fail(c, 'needs scales or sizes', 'TANDEM_ERR_BAD_DATA');
  if (x.length !== 4 || dims[0] !== x[0] || dims[1] !== x[1])
    throw fail(c, 'only 4-d NCHW resizing of the spatial axes is supported', 'TANDEM_ERR_UNSUPPORTED');
  let mode = c.attrs.string('mode', 'nearest');
  if (mode === 'bilinear') mode = 'linear';
  if (mode === 'bicubic') mode = 'cubic';
  if (mode !== 'nearest' && mode !== 'linear' && mode !== 'cubic')
    throw fail(c, `mode ${mode} is not supported (nearest, linear, cubic are)`, 'TANDEM_ERR_UNSUPPORTED');
  const ctm = upsample ? 'asymmetric' : c.attrs.string('coordinate_transformation_mode', 'half_pixel');
  if (
    ![
      'half_pixel',
      'asymmetric',
      'align_corners',
      'pytorch_half_pixel',
      'tf_half_pixel_for_nn',
      'tf_crop_and_resize',
    ].includes(ctm)
  )
    throw fail(c, `coordinate_transformation_mode ${ctm} is not supported`, 'TANDEM_ERR_UNSUPPORTED');
  const excludeOutside = c.attrs.int('exclude_outside', 0) !== 0;
  const cubicA = c.attrs.float('cubic_coeff_a', -0.75);
  // roi: starts of every axis, then ends; only H and W may crop (N and C are kept whole).
  let roi = [0, 0, 0, 0, 1, 1, 1, 1];
  if (ctm === 'tf_crop_and_resize') {
    const r = c.inputs[1] ? hostInts(c, 1, 'roi') : [];
    if (r.length !== 8)
      throw fail(c, `tf_crop_and_resize needs an roi of 8 values, got ${r.length}`, 'TANDEM_ERR_BAD_DATA');
    if (r[0] !== 0 || r[1] !== 0 || r[4] !== 1 || r[5] !== 1)
      throw fail(
        c,
        `an roi cropping N or C (op Resize, domain ai.onnx, opset ${c.opset}, attribute coordinate_transformation_mode) is not supported`,
        'TANDEM_ERR_UNSUPPORTED',
      );
    roi = r;
  }
  const extrapolation = c.attrs.float('extrapolation_value', 0);
  const nearestMode = upsample ? 'floor' : c.attrs.string('nearest_mode', 'round_prefer_floor');
  const scaleH = scales ? scales[2]! : dims[2]! / x[2]!;
  const scaleW = scales ? scales[3]! : dims[3]! / x[3]!;
  const roiH: [number, number] = [roi[2]!, roi[6]!];
  const roiW: [number, number] = [roi[3]!, roi[7]!];
  return { dims, mode, ctm, nearestMode, scaleH, scaleW, excludeOutside, cubicA, roiH, roiW, extrapolation };
}

type ResizeSpec = ReturnType<typeof resizeSpec>;

/** ONNX's coordinate transformations; align_corners uses the unrounded resized length in·scale. */
function sourceCoord(
  s: ResizeSpec,
  o: number,
  scale: number,
  inLen: number,
  outLen: number,
  roi: number[],
): number {
  switch (s.ctm) {
    case 'asymmetric':
      return o / scale;
    case 'align_corners':
      return inLen * scale === 1 ? 0 : (o * (inLen - 1)) / (inLen * scale - 1);
    case 'pytorch_half_pixel':
      return outLen > 1 ? (o + 0.5) / scale - 0.5 : 0;
    case 'tf_half_pixel_for_nn':
      return (o + 0.5) / scale;
    case 'tf_crop_and_resize':
      return outLen > 1
        ? roi[0]! * (inLen - 1) + (o * (roi[1]! - roi[0]!) * (inLen - 1)) / (outLen - 1)
        : ((roi[1]! - roi[0]!) * (inLen - 1)) / 2 + roi[0]! * (inLen - 1);
    default:
      return (o + 0.5) / scale - 0.5;
  }
}

function nearest(mode: string, v: number): number {
  switch (mode) {
    case 'floor':
      return Math.floor(v);
    case 'ceil':
      return Math.ceil(v);
    case 'round_prefer_ceil':
      return Math.round(v);
    default:
      return v === Math.floor(v) + 0.5 ? Math.floor(v) : Math.round(v);
  }
}

/** ONNX's cubic coefficients for the pixels at ⌊x⌋ − 1 … ⌊x⌋ + 2, ratio = x − ⌊x⌋ (onnx reference). */
function cubicCoeffs(r: number, A: number): number[] {
  return [
    ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
    ((A + 2) * r - (A + 3)) * r * r + 1,
    ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
    ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A,
  ];
}

/** Source pixels and weights of output index o along one axis; undefined outside tf_crop_and_resize's image. */
function taps(
  s: ResizeSpec,
  o: number,
  scale: number,
  n: number,
  out: number,
  roi: number[],
): Array<[number, number]> | undefined {
  const v = sourceCoord(s, o, scale, n, out, roi);
  if (s.ctm === 'tf_crop_and_resize' && (v < 0 || v > n - 1)) return undefined;
  const clamp = (i: number) => Math.min(Math.max(i, 0), n - 1);
  if (s.mode === 'nearest') return [[clamp(nearest(s.nearestMode, v)), 1]];
  if (s.mode === 'linear') {
    const c = clamp(v);
    const i0 = Math.floor(c);
    return [
      [i0, 1 - (c - i0)],
      [Math.min(i0 + 1, n - 1), c - i0],
    ];
  }
  const i0 = Math.floor(v);
  const w = cubicCoeffs(v - i0, s.cubicA).map((c, k) =>
    s.excludeOutside && (i0 - 1 + k < 0 || i0 - 1 + k >= n) ? 0 : c,
  );
  const sum = w.reduce((a, b) => a + b, 0);
  return w.map((c, k) => [clamp(i0 - 1 + k), s.excludeOutside ? c / sum : c]);
}

const resizeImpl: OpImpl = {
  hostInputs: [1, 2, 3],
  infer: (c) => [{ type: inp(c, 0).type, dims: resizeSpec(c).dims }],
  evaluate: (c, xs) => {
    const s = resizeSpec(c);
    const x = xs[0]!;
    const [n, ch, h, w] = x.dims as [number, number, number, number];
    const [ho, wo] = [s.dims[2]!, s.dims[3]!];
    const out = new Float64Array(numelOf(s.dims));
    const rows = Array.from({ length: ho }, (_, o) => taps(s, o, s.scaleH, h, ho, s.roiH));
    const cols = Array.from({ length: wo }, (_, o) => taps(s, o, s.scaleW, w, wo, s.roiW));
    for (let p = 0; p < n * ch; p++)
      for (let oy = 0; oy < ho; oy++)
        for (let ox = 0; ox < wo; ox++) {
          const [r, q] = [rows[oy], cols[ox]];
          let v = 0;
          if (!r || !q) v = s.extrapolation;
          else
            for (const [iy, wy] of r) for (const [ix, wx] of q) v += wy * wx * x.data[(p * h + iy) * w + ix]!;
          out[(p * ho + oy) * wo + ox] = v;
        }
    return [make(x.type, s.dims, out)];
  },
  lower: (c, t) => {
    const s = resizeSpec(c);
    const [h, w] = [inp(c, 0).dims[2]!, inp(c, 0).dims[3]!];
    // align_corners is x = o·(in − 1)/(in·scale − 1) with the unrounded in·scale (ONNX's reference),
    // which is the asymmetric transform x = o/s′ with s′ = (in·scale − 1)/(in − 1): lowered as that, so
    // the kernel never needs the unrounded resized length.
    const aligned = (n: number, scale: number): number =>
      n > 1 && n * scale !== 1 ? (n * scale - 1) / (n - 1) : 1e30;
    const ac = s.ctm === 'align_corners';
    t.submit(
      'onnx_resize',
      { x: t.input(0), y: t.output(0) },
      {
        mode: s.mode,
        coordinateTransformationMode: ac ? 'asymmetric' : s.ctm,
        nearestMode: s.nearestMode,
        scaleH: ac ? aligned(h, s.scaleH) : s.scaleH,
        scaleW: ac ? aligned(w, s.scaleW) : s.scaleW,
        cubicCoeffA: s.cubicA,
        excludeOutside: s.excludeOutside,
        ...(s.ctm === 'tf_crop_and_resize'
          ? { roiH0: s.roiH[0], roiH1: s.roiH[1], roiW0: s.roiW[0], roiW1: s.roiW[1] }
          : {}),
        extrapolationValue: s.extrapolation,
      },
    );
  },
};

export const RESIZE_OPS: Record<string, OpImpl> = {
  Resize: resizeImpl,
  Upsample: resizeImpl,
};
