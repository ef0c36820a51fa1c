/**
 * HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix: constant generators whose inputs are
 * sizes and frequencies (host-known scalars), evaluated on the host like Range and ConstantOfShape;
 * their values then reach the device as any constant does.
 */
import { elemTypeOf, roundTo, type ElemType } from '../host-tensor.js';
import { fail, inp, make } from './util.js';
import type { OpCall, OpImpl } from './types.js';

function scalar(c: OpCall, i: number, what: string): number {
  const v = inp(c, i).host;
  if (!v || v.data.length !== 1)
    throw fail(
      c,
      `${what} must be one value known before the run (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, input ${i})`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  return v.data[0]!;
}

function outType(c: OpCall): ElemType {
  const t = elemTypeOf(c.attrs.int('output_datatype', 1), `${c.node.opType} node '${c.node.name}'`);
  if (t === 'string' || t === 'complex64' || t === 'complex128')
    throw fail(c, `output_datatype ${t} is not supported`, 'TANDEM_ERR_UNSUPPORTED');
  return t;
}

/** The cosine-sum window a0 − a1·cos(2πn/N) + a2·cos(4πn/N); N = size (periodic) or size − 1. */
function windowImpl(a: readonly [number, number, number]): OpImpl {
  const values = (c: OpCall) => {
    const size = scalar(c, 0, 'size');
    if (!Number.isInteger(size) || size < 0)
      throw fail(c, `size ${size} is not a count`, 'TANDEM_ERR_BAD_DATA');
    const N = c.attrs.int('periodic', 1) !== 0 ? size : size - 1;
    return Array.from({ length: size }, (_, n) => {
      const x = (2 * Math.PI * n) / N;
      return a[0] - a[1] * Math.cos(x) + a[2] * Math.cos(2 * x);
    });
  };
  return {
    hostInputs: [0],
    infer: (c) => [{ type: outType(c), dims: [values(c).length] }],
    evaluate: (c) => {
      const type = outType(c);
      const v = values(c);
      return [
        make(
          type,
          [v.length],
          v.map((e) => roundTo(type, e)),
        ),
      ];
    },
  };
}

/** ONNX's reference construction: triangular filters between mel-spaced spectrogram bins. */
function melWeights(c: OpCall): { dims: number[]; data: number[] } {
  const [bins, dft, rate] = [0, 1, 2].map((i) =>
    scalar(c, i, ['num_mel_bins', 'dft_length', 'sample_rate'][i]!),
  );
  const [lo, hi] = [scalar(c, 3, 'lower_edge_hertz'), scalar(c, 4, 'upper_edge_hertz')];
  const f = Math.fround;
  // The reference computes the edge mels in float32 (its inputs' type), the bins in float64.
  const mel = (hz: number) => f(2595 * f(Math.log10(f(1 + f(hz / 700)))));
  const [lowMel, highMel] = [mel(lo), mel(hi)];
  const step = f((highMel - lowMel) / (bins + 2));
  const freq = Array.from({ length: bins + 2 }, (_, k) => {
    const hz = 700 * (10 ** ((k * step + lowMel) / 2595) - 1);
    return Math.floor(((dft + 1) * hz) / rate);
  });
  const spec = Math.floor(dft / 2) + 1;
  const out = new Array<number>(spec * bins).fill(0);
  const set = (j: number, i: number, v: number) => {
    if (j < 0 || j >= spec)
      throw fail(c, `a mel filter edge falls outside the ${spec} spectrogram bins`, 'TANDEM_ERR_BAD_DATA');
    out[j * bins + i] = v;
  };
  for (let i = 0; i < bins; i++) {
    const [l, m, h] = [freq[i]!, freq[i + 1]!, freq[i + 2]!];
    if (m === l) set(m, i, 1);
    else for (let j = l; j <= m; j++) set(j, i, (j - l) / (m - l));
    for (let j = m; j < h; j++) set(j, i, (h - j) / (h - m));
  }
  return { dims: [spec, bins], data: out };
}

const melImpl: OpImpl = {
  hostInputs: [0, 1, 2, 3, 4],
  infer: (c) => [{ type: outType(c), dims: melWeights(c).dims }],
  evaluate: (c) => {
    const type = outType(c);
    const m = melWeights(c);
    return [
      make(
        type,
        m.dims,
        m.data.map((v) => roundTo(type, v)),
      ),
    ];
  },
};

export const WINDOW_OPS: Record<string, OpImpl> = {
  HannWindow: windowImpl([0.5, 0.5, 0]),
  HammingWindow: windowImpl([25 / 46, 1 - 25 / 46, 0]),
  BlackmanWindow: windowImpl([0.42, 0.5, 0.08]),
  MelWeightMatrix: melImpl,
};
