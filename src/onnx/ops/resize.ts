/**
 * Resize (opsets 10–21) and Upsample (opset 9): 4-d NCHW, nearest or (bi)linear, ONNX's coordinate
 * transformations; lowered onto onnx_resize.
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
  if (mode !== 'nearest' && mode !== 'linear')
    throw fail(c, `mode ${mode} is not supported (nearest, linear are)`, 'TANDEM_ERR_UNSUPPORTED');
  const ctm = upsample ? 'asymmetric' : c.attrs.string('coordinate_transformation_mode', 'half_pixel');
  if (
    !['half_pixel', 'asymmetric', 'align_corners', 'pytorch_half_pixel', 'tf_half_pixel_for_nn'].includes(ctm)
  )
    throw fail(c, `coordinate_transformation_mode ${ctm} is not supported`, 'TANDEM_ERR_UNSUPPORTED');
  if (c.attrs.int('exclude_outside', 0) !== 0)
    throw fail(c, 'exclude_outside is not supported', 'TANDEM_ERR_UNSUPPORTED');
  const nearestMode = upsample ? 'floor' : c.attrs.string('nearest_mode', 'round_prefer_floor');
  const scaleH = scales ? scales[2]! : dims[2]! / x[2]!;
  const scaleW = scales ? scales[3]! : dims[3]! / x[3]!;
  return { dims, mode, ctm, nearestMode, scaleH, scaleW };
}

/** ONNX's coordinate transformations; align_corners uses the unrounded resized length in·scale. */
function sourceCoord(ctm: string, o: number, scale: number, inLen: number, outLen: number): number {
  switch (ctm) {
    case 'asymmetric':
      return o / scale;
    case 'align_corners':
      return inLen * scale === 1 ? 0 : (o * (inLen - 1)) / (inLen * scale - 1);
    case 'pytorch_half_pixel':
      return outLen > 1 ? (o + 0.5) / scale - 0.5 : 0;
    case 'tf_half_pixel_for_nn':
      return (o + 0.5) / scale;
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

const resizeImpl: OpImpl = {
  hostInputs: [1, 2, 3],
  infer: (c) => [{ type: inp(c, 0).type, dims: resizeSpec(c).dims }],
  evaluate: (c, xs) => {
    const s = resizeSpec(c);
    const x = xs[0]!;
    const [n, ch, h, w] = x.dims as [number, number, number, number];
    const [ho, wo] = [s.dims[2]!, s.dims[3]!];
    const out = new Float64Array(numelOf(s.dims));
    const clamp = (v: number, hi: number) => Math.min(Math.max(v, 0), hi);
    for (let p = 0; p < n * ch; p++)
      for (let oy = 0; oy < ho; oy++) {
        const sy = sourceCoord(s.ctm, oy, s.scaleH, h, ho);
        for (let ox = 0; ox < wo; ox++) {
          const sx = sourceCoord(s.ctm, ox, s.scaleW, w, wo);
          let v: number;
          if (s.mode === 'nearest')
            v =
              x.data[
                (p * h + clamp(nearest(s.nearestMode, sy), h - 1)) * w +
                  clamp(nearest(s.nearestMode, sx), w - 1)
              ]!;
          else {
            const cy = clamp(sy, h - 1);
            const cx = clamp(sx, w - 1);
            const y0 = Math.floor(cy);
            const x0 = Math.floor(cx);
            const y1 = Math.min(y0 + 1, h - 1);
            const x1 = Math.min(x0 + 1, w - 1);
            const [fy, fx] = [cy - y0, cx - x0];
            const at = (yy: number, xx: number) => x.data[(p * h + yy) * w + xx]!;
            v =
              (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
              fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
          }
          out[(p * ho + oy) * wo + ox] = v;
        }
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
      },
    );
  },
};

export const RESIZE_OPS: Record<string, OpImpl> = {
  Resize: resizeImpl,
  Upsample: resizeImpl,
};
