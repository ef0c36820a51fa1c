/**
 * DFT (opsets 17–21) and STFT (17–21) composed from existing kernels: a transform of length N is one
 * onnx_matmul of the signal, viewed as rows of N complex (or real) values, by a [N·C, K·2] DFT matrix
 * computed on the host (cos and ∓sin of 2πkn/N for real and imaginary parts, 1/N for the inverse; rows
 * past dft_length zero, a shorter signal zero-padded by leaving its rows out). The transformed axis is
 * moved next to the complex axis with onnx_transpose and back; STFT's frames are one onnx_gather of
 * the signal by host-built positions, multiplied by the window (onnx_binary). O(N²) per transform,
 * which is fine for the frame and signal lengths these ops see in models; the float64 evaluations are
 * the direct sums.
 */
import type { Tensor } from '../../memory/tensor.js';
import { numelOf, roundTo } from '../host-tensor.js';
import { DeviceOps } from './compose.js';
import { fail, inp, make, normAxis } from './util.js';
import type { LowerTarget, OpCall, OpImpl } from './types.js';

function hostScalar(c: OpCall, i: number, what: string): number | undefined {
  const v = c.inputs[i];
  if (!v) return undefined;
  if (!v.host || v.host.data.length !== 1)
    throw fail(
      c,
      `${what} must be one value known before the run (op ${c.node.opType}, domain ai.onnx, opset ${c.opset}, input ${i})`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  return v.host.data[0]!;
}

/** The [len·C, K·2] matrix: row (n, c) times column (k, re/im); zero rows for n ≥ N. */
function dftMatrix(len: number, complex: boolean, N: number, K: number, inverse: boolean): number[] {
  const C = complex ? 2 : 1;
  const w = new Array<number>(len * C * K * 2).fill(0);
  const sign = inverse ? 1 : -1;
  const scale = inverse ? 1 / N : 1;
  for (let n = 0; n < Math.min(len, N); n++)
    for (let k = 0; k < K; k++) {
      const th = (2 * Math.PI * ((k * n) % N)) / N;
      const [cs, sn] = [Math.cos(th) * scale, sign * Math.sin(th) * scale];
      // (a + ib)(cos + i·sn) = a·cos − b·sn + i(a·sn + b·cos)
      const row = (cc: number) => ((n * C + cc) * K + k) * 2;
      w[row(0)] = cs;
      w[row(0) + 1] = sn;
      if (complex) {
        w[row(1)] = -sn;
        w[row(1) + 1] = cs;
      }
    }
  return w;
}

function dftSpec(c: OpCall) {
  const x = inp(c, 0).dims;
  const r = x.length;
  if (r < 2 || (x[r - 1] !== 1 && x[r - 1] !== 2))
    throw fail(c, `the input must end in 1 (real) or 2 (complex)`);
  const axisIn = c.opset >= 20 ? hostScalar(c, 2, 'axis') : undefined;
  const axis = normAxis(c, axisIn ?? c.attrs.int('axis', c.opset >= 20 ? -2 : 1), r);
  if (axis === r - 1) throw fail(c, 'the transformed axis cannot be the complex axis', 'TANDEM_ERR_BAD_DATA');
  const len = x[axis]!;
  const N = hostScalar(c, 1, 'dft_length') ?? len;
  const complex = x[r - 1] === 2;
  const inverse = c.attrs.int('inverse', 0) !== 0;
  const onesided = c.attrs.int('onesided', 0) !== 0;
  if (onesided && (complex || inverse))
    throw fail(
      c,
      `onesided with a complex or inverse transform (op DFT, domain ai.onnx, opset ${c.opset}, attribute onesided) is not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  const K = onesided ? Math.floor(N / 2) + 1 : N;
  const out = x.map((d, i) => (i === axis ? K : i === r - 1 ? 2 : d));
  return { axis, len, N, K, complex, inverse, out };
}

/** y = x·W over rows of x [M, len·C] on the device, into `y` [M, K·2]. */
function matmulInto(t: LowerTarget, rows: Tensor, w: number[], y: Tensor): void {
  t.submit('onnx_matmul', { a: rows, b: t.constant([rows.shape[1]!, y.shape[1]!], rows.dtype, w), c: y });
}

const dftImpl: OpImpl = {
  hostInputs: [1, 2],
  infer: (c) => [{ type: inp(c, 0).type, dims: dftSpec(c).out }],
  evaluate: (c, xs) => {
    const s = dftSpec(c);
    const x = xs[0]!;
    const dims = x.dims;
    const C = s.complex ? 2 : 1;
    const stride = numelOf(dims.slice(s.axis + 1));
    const outStride = numelOf(s.out.slice(s.axis + 1));
    const outer = numelOf(dims.slice(0, s.axis));
    const inner = stride / C;
    const y = new Float64Array(numelOf(s.out));
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < inner; i++)
        for (let k = 0; k < s.K; k++) {
          let [re, im] = [0, 0];
          for (let n = 0; n < Math.min(s.len, s.N); n++) {
            const at = o * s.len * stride + n * stride + i * C;
            const [a, b] = [x.data[at]!, s.complex ? x.data[at + 1]! : 0];
            const th = ((s.inverse ? 2 : -2) * Math.PI * ((k * n) % s.N)) / s.N;
            re += a * Math.cos(th) - b * Math.sin(th);
            im += a * Math.sin(th) + b * Math.cos(th);
          }
          const at = o * s.K * outStride + k * outStride + i * 2;
          y[at] = s.inverse ? re / s.N : re;
          y[at + 1] = s.inverse ? im / s.N : im;
        }
    return [
      make(
        x.type,
        s.out,
        Array.from(y, (v) => roundTo(x.type, v)),
      ),
    ];
  },
  lower: (c, t) => {
    const s = dftSpec(c);
    const x = t.input(0);
    const o = new DeviceOps(t, x);
    const r = x.shape.length;
    // [others…, axis, complex]: rows of len·C values.
    const perm = [...x.shape.keys()].filter((i) => i !== s.axis && i !== r - 1).concat([s.axis, r - 1]);
    const moved = perm.every((p, i) => p === i) ? x : o.transpose(x, perm);
    const M = numelOf(x.shape) / (s.len * x.shape[r - 1]!);
    const rows = o.reshape(moved, [M, s.len * x.shape[r - 1]!]);
    const y = o.tmp([M, s.K * 2]);
    matmulInto(t, rows, dftMatrix(s.len, s.complex, s.N, s.K, s.inverse), y);
    const movedOut = perm.map((p) => s.out[p]!);
    if (perm.every((p, i) => p === i)) return void o.reshape(y, s.out, t.output(0));
    const inverse = perm.map((_, i) => perm.indexOf(i));
    o.transpose(o.reshape(y, movedOut), inverse, t.output(0));
  },
};

function stftSpec(c: OpCall) {
  const x = inp(c, 0).dims;
  if (x.length !== 3 || (x[2] !== 1 && x[2] !== 2))
    throw fail(c, `signal must be [batch, length, 1 or 2], got [${x.join(', ')}]`);
  const step = hostScalar(c, 1, 'frame_step')!;
  const window = c.inputs[2];
  const frameLen = hostScalar(c, 3, 'frame_length') ?? window?.dims[0];
  if (!frameLen || !step)
    throw fail(c, 'frame_step and a window or frame_length are required', 'TANDEM_ERR_BAD_DATA');
  if (window && (window.dims.length !== 1 || window.dims[0] !== frameLen))
    throw fail(c, `window must be [${frameLen}], got [${window.dims.join(', ')}]`);
  const complex = x[2] === 2;
  const onesided = c.attrs.int('onesided', 1) !== 0 && !complex;
  const frames = Math.floor((x[1]! - frameLen) / step) + 1;
  if (frames < 1) throw fail(c, `a frame of ${frameLen} does not fit a signal of ${x[1]}`);
  const K = onesided ? Math.floor(frameLen / 2) + 1 : frameLen;
  return { batch: x[0]!, frames, frameLen, step, complex, K, out: [x[0]!, frames, K, 2] };
}

const stftImpl: OpImpl = {
  hostInputs: [1, 3],
  infer: (c) => [{ type: inp(c, 0).type, dims: stftSpec(c).out }],
  evaluate: (c, xs) => {
    const s = stftSpec(c);
    const x = xs[0]!;
    const C = s.complex ? 2 : 1;
    const L = x.dims[1]!;
    const y = new Float64Array(numelOf(s.out));
    for (let b = 0; b < s.batch; b++)
      for (let f = 0; f < s.frames; f++)
        for (let k = 0; k < s.K; k++) {
          let [re, im] = [0, 0];
          for (let n = 0; n < s.frameLen; n++) {
            const w = xs[2] ? xs[2].data[n]! : 1;
            const at = (b * L + f * s.step + n) * C;
            const [a, bb] = [x.data[at]! * w, s.complex ? x.data[at + 1]! * w : 0];
            const th = (-2 * Math.PI * ((k * n) % s.frameLen)) / s.frameLen;
            re += a * Math.cos(th) - bb * Math.sin(th);
            im += a * Math.sin(th) + bb * Math.cos(th);
          }
          const at = ((b * s.frames + f) * s.K + k) * 2;
          [y[at], y[at + 1]] = [re, im];
        }
    return [
      make(
        x.type,
        s.out,
        Array.from(y, (v) => roundTo(x.type, v)),
      ),
    ];
  },
  lower: (c, t) => {
    const s = stftSpec(c);
    const x = t.input(0);
    const o = new DeviceOps(t, x);
    const C = s.complex ? 2 : 1;
    const positions = Array.from(
      { length: s.frames * s.frameLen },
      (_, e) => Math.floor(e / s.frameLen) * s.step + (e % s.frameLen),
    );
    let frames = o.tmp([s.batch, s.frames * s.frameLen, C]);
    t.submit(
      'onnx_gather',
      { data: x, indices: t.constant([positions.length], 'i32', positions), y: frames },
      { axis: 1 },
    );
    if (c.inputs[2]) {
      const w = o.reshape(t.input(2), [1, s.frameLen, 1]);
      frames = o.binary('mul', o.reshape(frames, [s.batch * s.frames, s.frameLen, C]), w);
    }
    const rows = o.reshape(frames, [s.batch * s.frames, s.frameLen * C]);
    const y = o.tmp([s.batch * s.frames, s.K * 2]);
    matmulInto(t, rows, dftMatrix(s.frameLen, s.complex, s.frameLen, s.K, false), y);
    o.reshape(y, s.out, t.output(0));
  },
};

export const SPECTRAL_OPS: Record<string, OpImpl> = { DFT: dftImpl, STFT: stftImpl };
