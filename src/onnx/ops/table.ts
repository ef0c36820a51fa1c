/** The operators of the default ONNX domain Tandem runs, by op type. */
import { TandemError } from '../../core/errors.js';
import { ACTIVATION_OPS } from './activations.js';
import { CONV_OPS } from './conv.js';
import { ELEMENTWISE_OPS } from './elementwise.js';
import { DET_OPS } from './det.js';
import { EINSUM_OPS } from './einsum.js';
import { GATHER_ND_OPS } from './gather-nd.js';
import { INDEX_OPS } from './indexing.js';
import { LOSS_OPS } from './losses.js';
import { LAYOUT_OPS } from './layout.js';
import { MATH_OPS } from './math.js';
import { REARRANGE_OPS } from './rearrange.js';
import { SAMPLING_OPS } from './sampling.js';
import { SELECTION_OPS } from './selection.js';
import { SPECTRAL_OPS } from './spectral.js';
import { SCATTER_OPS } from './scatter.js';
import { NORM_COMPOSED_OPS } from './norm-composed.js';
import { withPool3d } from './pool3d.js';
import { QUANTIZE_OPS } from './quantize.js';
import { RECURRENT_OPS } from './recurrent.js';
import { RESIZE_OPS } from './resize.js';
import { WINDOW_OPS } from './windows.js';
import { TFIDF_OPS } from './tfidf.js';
import { UNPOOL_OPS } from './unpool.js';
import { VALUE_OPS } from './values.js';
import type { OpImpl } from './types.js';

export const ONNX_OPS: Readonly<Record<string, OpImpl>> = {
  ...ELEMENTWISE_OPS,
  ...LAYOUT_OPS,
  ...CONV_OPS,
  ...MATH_OPS,
  ...RESIZE_OPS,
  ...VALUE_OPS,
  ...INDEX_OPS,
  ...ACTIVATION_OPS,
  ...REARRANGE_OPS,
  ...GATHER_ND_OPS,
  ...SCATTER_OPS,
  ...LOSS_OPS,
  ...RECURRENT_OPS,
  ...EINSUM_OPS,
  ...SAMPLING_OPS,
  ...SELECTION_OPS,
  ...NORM_COMPOSED_OPS,
  ...WINDOW_OPS,
  ...QUANTIZE_OPS,
  ...UNPOOL_OPS,
  ...DET_OPS,
  ...SPECTRAL_OPS,
  ...TFIDF_OPS,
  MaxPool: withPool3d('max', CONV_OPS['MaxPool']!),
  AveragePool: withPool3d('avg', CONV_OPS['AveragePool']!),
};

/** The op's implementation, or TANDEM_ERR_UNSUPPORTED naming the op, its domain and the opset. */
export function opImpl(opType: string, domain: string, opset: number): OpImpl {
  const impl = domain === '' ? ONNX_OPS[opType] : undefined;
  if (!impl) {
    const d = domain === '' ? 'ai.onnx' : domain;
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `onnx: operator ${opType} (domain ${d}, opset ${opset}) is not supported`,
      { op: opType, domain: d, opset },
    );
  }
  return impl;
}

/** Ops that run on device kernels (the rest are evaluated on the host when their inputs are known there). */
export function deviceOps(): string[] {
  return Object.entries(ONNX_OPS)
    .filter(([, v]) => v.lower !== undefined)
    .map(([k]) => k)
    .sort();
}
