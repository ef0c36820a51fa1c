/**
 * DepthToSpace and SpaceToDepth: x [N,C,H,W] viewed as a rank-6 tensor, permuted, viewed as the result
 * (ONNX's definition, DCR and CRD modes); on device a copy into the rank-6 view, onnx_transpose and a
 * copy out, so any dtype the copies take. ReverseSequence: each batch entry's first sequence_lens[b]
 * time steps reversed, on device one onnx_gather of x's (time, batch) rows by source row indices
 * computed from the host-known lengths.
 */
import { numelOf } from '../host-tensor.js';
import { fail, inp, make, stridesOf } from './util.js';
import type { OpCall, OpImpl } from './types.js';

interface Rearrange {
  readonly view: number[];
  readonly perm: number[];
  readonly out: number[];
}

function rearrangeSpec(c: OpCall): Rearrange {
  const d = inp(c, 0).dims;
  if (d.length !== 4) throw fail(c, `the input must be 4-d [N,C,H,W], got rank ${d.length}`);
  const [n, ch, h, w] = d as [number, number, number, number];
  const b = c.attrs.int('blocksize');
  if (!Number.isInteger(b) || b < 1) throw fail(c, `blocksize ${b} must be a positive integer`);
  if (c.node.opType === 'SpaceToDepth') {
    if (h % b !== 0 || w % b !== 0) throw fail(c, `H ${h} and W ${w} must be multiples of blocksize ${b}`);
    return {
      view: [n, ch, h / b, b, w / b, b],
      perm: [0, 3, 5, 1, 2, 4],
      out: [n, ch * b * b, h / b, w / b],
    };
  }
  if (ch % (b * b) !== 0) throw fail(c, `C ${ch} must be a multiple of blocksize² ${b * b}`);
  const out = [n, ch / (b * b), h * b, w * b];
  const mode = c.attrs.string('mode', 'DCR');
  if (mode === 'DCR') return { view: [n, b, b, ch / (b * b), h, w], perm: [0, 3, 4, 1, 5, 2], out };
  if (mode === 'CRD') return { view: [n, ch / (b * b), b, b, h, w], perm: [0, 1, 4, 2, 5, 3], out };
  throw fail(c, `mode ${mode} is not DCR or CRD`, 'TANDEM_ERR_BAD_DATA');
}

/** Row-major data of dims `view` permuted by `perm` (numpy.transpose). */
function permute(data: Float64Array, view: readonly number[], perm: readonly number[]): Float64Array {
  const dims = perm.map((p) => view[p]!);
  const src = stridesOf(view);
  const out = new Float64Array(numelOf(dims));
  const idx = new Array<number>(dims.length).fill(0);
  for (let e = 0; e < out.length; e++) {
    let off = 0;
    for (let k = 0; k < dims.length; k++) off += idx[k]! * src[perm[k]!]!;
    out[e] = data[off]!;
    for (let k = dims.length - 1; k >= 0; k--) {
      if (++idx[k]! < dims[k]!) break;
      idx[k] = 0;
    }
  }
  return out;
}

const rearrangeImpl: OpImpl = {
  infer: (c) => [{ type: inp(c, 0).type, dims: rearrangeSpec(c).out }],
  evaluate: (c, x) => {
    const s = rearrangeSpec(c);
    return [make(x[0]!.type, s.out, permute(x[0]!.data, s.view, s.perm))];
  },
  lower: (c, t) => {
    const s = rearrangeSpec(c);
    const [x, y] = [t.input(0), t.output(0)];
    const [v, p] = [
      t.scratch(s.view, x),
      t.scratch(
        s.perm.map((k) => s.view[k]!),
        x,
      ),
    ];
    t.submit('copy', { x, y: v });
    t.submit('onnx_transpose', { x: v, y: p }, { perm: s.perm.join(',') });
    t.submit('copy', { x: p, y });
  },
};

/** For each (time, batch) row of x in storage order: the row it reads. */
function reverseRows(c: OpCall): { rows: number[]; rest: number } {
  const dims = inp(c, 0).dims;
  const timeAxis = c.attrs.int('time_axis', 0);
  const batchAxis = c.attrs.int('batch_axis', 1);
  if (dims.length < 2 || ![timeAxis, batchAxis].every((a) => a === 0 || a === 1) || timeAxis === batchAxis)
    throw fail(c, `time_axis ${timeAxis} and batch_axis ${batchAxis} must be 0 and 1 of a rank ≥ 2 input`);
  const lens = inp(c, 1).host;
  if (!lens)
    throw fail(
      c,
      `sequence_lens computed during the run (op ReverseSequence, domain ai.onnx, opset ${c.opset}, input 1) is not supported`,
      'TANDEM_ERR_UNSUPPORTED',
    );
  const [T, B] = [dims[timeAxis]!, dims[batchAxis]!];
  if (lens.data.length !== B || lens.data.some((l) => l < 0 || l > T))
    throw fail(c, `sequence_lens must hold ${B} lengths in [0, ${T}]`, 'TANDEM_ERR_BAD_DATA');
  const at = (t: number, b: number) => (timeAxis === 0 ? t * B + b : b * T + t);
  const rows = new Array<number>(T * B);
  for (let t = 0; t < T; t++)
    for (let b = 0; b < B; b++) {
      const len = lens.data[b]!;
      rows[at(t, b)] = at(t < len ? len - 1 - t : t, b);
    }
  return { rows, rest: numelOf(dims.slice(2)) };
}

const reverseSequenceImpl: OpImpl = {
  hostInputs: [1],
  infer: (c) => {
    reverseRows(c);
    return [{ type: inp(c, 0).type, dims: inp(c, 0).dims }];
  },
  evaluate: (c, x) => {
    const { rows, rest } = reverseRows(c);
    const out = rows.flatMap((r) => Array.from(x[0]!.data.subarray(r * rest, (r + 1) * rest)));
    return [make(x[0]!.type, x[0]!.dims, out)];
  },
  lower: (c, t) => {
    const { rows, rest } = reverseRows(c);
    const x = t.input(0);
    const flat = t.scratch([rows.length, rest], x);
    t.submit('copy', { x, y: flat });
    const picked = t.scratch([rows.length, rest], x);
    t.submit(
      'onnx_gather',
      { data: flat, indices: t.constant([rows.length], 'i32', rows), y: picked },
      { axis: 0 },
    );
    t.submit('copy', { x: picked, y: t.output(0) });
  },
};

export const REARRANGE_OPS: Record<string, OpImpl> = {
  ReverseSequence: reverseSequenceImpl,
  DepthToSpace: rearrangeImpl,
  SpaceToDepth: rearrangeImpl,
};
