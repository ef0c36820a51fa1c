/**
 * Conformance cases of the norm group: odd sizes (no multiple of a warp or a vector width), all four
 * float dtypes, vocabulary padding (Vp > V) and ignored targets (-1) for softmax_xent, accumulate on and
 * off for every gradient output, dropout offsets that are not multiples of four and seeds above 2^32.
 */
import { type DType, epsilon } from '../../core/dtype.js';
import type { Scalars } from '../../devices/device.js';
import type { CaseArg, ConformanceCase } from '../case-types.js';
import { statDType } from '../common/norm-checks.js';

const DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

/** Precision of the arithmetic: f16/bf16 compute in f32. */
function work(dtype: DType): number {
  return epsilon(dtype === 'f64' ? 'f64' : 'f32');
}

/** One rounding to the stored dtype plus `terms` accumulated rounding errors of the arithmetic. */
function tol(dtype: DType, terms: number, rtolTerms = 16): { rtol: number; atol: number } {
  return { rtol: 2 * epsilon(dtype) + rtolTerms * work(dtype), atol: terms * work(dtype) };
}

function layernormCases(dtype: DType): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const stat = statDType(dtype);
  // 264 = 33 vectors of 8: the GPUs' 16-byte vector path with one lane taking a second vector.
  for (const shape of [
    [7, 77],
    [2, 3, 129],
    [3, 1031],
    [3, 5, 264],
  ]) {
    const cols = shape[shape.length - 1]!;
    const lead = shape.slice(0, -1);
    const rows = lead.reduce((a, b) => a * b, 1);
    const t = tol(dtype, 2 * cols);
    const vec: CaseArg = { shape: [cols], dtype };
    const stats = { mean: { shape: lead, dtype: stat }, rstd: { shape: lead, dtype: stat } };
    out.push({
      name: `layernorm ${dtype} [${shape}]`,
      op: 'layernorm',
      args: { x: { shape, dtype }, w: vec, b: vec, y: { shape, dtype }, ...stats },
      scalars: cols === 77 ? { eps: 1e-3 } : {},
      ...t,
    });
    out.push({
      name: `residual_layernorm ${dtype} [${shape}]`,
      op: 'residual_layernorm',
      args: {
        a: { shape, dtype },
        r: { shape, dtype },
        s: { shape, dtype },
        w: vec,
        b: vec,
        y: { shape, dtype },
        ...stats,
      },
      scalars: {},
      ...t,
    });
    for (const [accumulate, accumulateDx] of [
      [false, false],
      [true, true],
      [true, false],
    ] as const) {
      out.push({
        name: `layernorm_backward ${dtype} [${shape}] accumulate ${accumulate} accumulateDx ${accumulateDx}`,
        op: 'layernorm_backward',
        args: {
          dy: { shape, dtype },
          x: { shape, dtype },
          w: vec,
          mean: { shape: lead, dtype: stat },
          rstd: { shape: lead, dtype: stat, range: 'positive' },
          dx: { shape, dtype },
          dw: vec,
          db: vec,
        },
        scalars: { accumulate, accumulateDx },
        // dx sums over C, dw/db over the rows; x̂ reaches about 4 with rstd up to 2.
        ...tol(dtype, 16 * (cols + rows), 64),
      });
    }
  }
  return out;
}

function embeddingCases(dtype: DType): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const [batch, steps, cols, vocab, positions] = [3, 5, 33, 11, 7];
  const ids: CaseArg = { shape: [batch, steps], dtype: 'i32', range: 'index', max: vocab };
  out.push({
    name: `embedding ${dtype} B${batch} T${steps} C${cols} V${vocab}`,
    op: 'embedding',
    args: {
      ids,
      wte: { shape: [vocab, cols], dtype },
      wpe: { shape: [positions, cols], dtype },
      y: { shape: [batch, steps, cols], dtype },
    },
    scalars: {},
    ...tol(dtype, 2, 2),
  });
  for (const accumulate of [false, true]) {
    out.push({
      name: `embedding_backward ${dtype} B${batch} T${steps} C${cols} V${vocab} accumulate ${accumulate}`,
      op: 'embedding_backward',
      args: {
        ids,
        dy: { shape: [batch, steps, cols], dtype },
        dwte: { shape: [vocab, cols], dtype },
        dwpe: { shape: [positions, cols], dtype },
      },
      scalars: { accumulate },
      ...tol(dtype, 4 * batch * steps),
    });
  }
  return out;
}

function softmaxXentCases(dtype: DType): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const layouts = [
    // Small V with many rows: ignored targets (-1) are drawn with probability 1/6 per row.
    { shape: [31, 8], vocab: 5, wide: false },
    { shape: [13, 80], vocab: 77, wide: false },
    { shape: [2, 5, 1031], vocab: 1031, wide: false },
    // Logits up to ±300: exp overflows in f32 without the max subtraction.
    { shape: [9, 67], vocab: 61, wide: true },
  ];
  for (const l of layouts) {
    const lead = l.shape.slice(0, -1);
    for (const backward of [true, false]) {
      if (!backward && l.vocab !== 77) continue;
      const gradScale = l.vocab === 77 ? 1 : 0.37;
      out.push({
        name: `softmax_xent ${dtype} [${l.shape}] V${l.vocab}${l.wide ? ' wide' : ''} backward ${backward}`,
        op: 'softmax_xent',
        args: {
          logits: { shape: l.shape, dtype, range: l.wide ? 'wide' : 'signed' },
          targets: { shape: lead, dtype: 'i32', range: 'index', min: -1, max: l.vocab },
          losses: { shape: lead, dtype: statDType(dtype) },
        },
        scalars: { vocab: l.vocab, gradScale, backward },
        // The lse's absolute error grows with the logits' size; exp turns it into a relative one.
        ...tol(dtype, 16, l.wide ? 4096 : 64),
      });
    }
    // softmax_xent_scaled: the gradient times a device loss scale (fp16's 2^16 and a backed-off one).
    if (l.wide) continue;
    for (const scale of [65536, 0.25]) {
      out.push({
        name: `softmax_xent_scaled ${dtype} [${l.shape}] V${l.vocab} scale ${scale}`,
        op: 'softmax_xent_scaled',
        args: {
          logits: { shape: l.shape, dtype, range: 'signed' },
          targets: { shape: lead, dtype: 'i32', range: 'index', min: -1, max: l.vocab },
          losses: { shape: lead, dtype: statDType(dtype) },
          scale: { shape: [1], dtype: 'f64', values: [scale] },
        },
        scalars: { vocab: l.vocab, gradScale: 1 / lead.reduce((a, b) => a * b, 1) },
        ...tol(dtype, 16, 64),
      });
    }
  }
  return out;
}

function dropoutCases(dtype: DType): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const runs: readonly { shape: number[]; scalars: Scalars }[] = [
    { shape: [4099], scalars: { p: 0.3, seed: 12345 } },
    { shape: [3, 5, 7], scalars: { p: 0.5, seed: 2 ** 40 + 7, offset: 6 } },
    { shape: [257], scalars: { p: 0, seed: 9, offset: 1 } },
  ];
  for (const r of runs) {
    const t = { rtol: 2 * epsilon(dtype), atol: 0 };
    out.push({
      name: `dropout ${dtype} [${r.shape}] ${JSON.stringify(r.scalars)}`,
      op: 'dropout',
      args: { x: { shape: r.shape, dtype }, y: { shape: r.shape, dtype } },
      scalars: r.scalars,
      ...t,
    });
    for (const accumulate of [false, true]) {
      out.push({
        name: `dropout_backward ${dtype} [${r.shape}] ${JSON.stringify(r.scalars)} accumulate ${accumulate}`,
        op: 'dropout_backward',
        args: { dy: { shape: r.shape, dtype }, dx: { shape: r.shape, dtype } },
        scalars: { ...r.scalars, accumulate },
        ...t,
        atol: accumulate ? 2 * epsilon(dtype) : 0,
      });
    }
  }
  return out;
}

export function normCases(): ConformanceCase[] {
  return DTYPES.flatMap((d) => [
    ...layernormCases(d),
    ...embeddingCases(d),
    ...softmaxXentCases(d),
    ...dropoutCases(d),
  ]);
}
