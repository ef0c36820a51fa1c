/**
 * The KV-cache ops of GPT inference (issue 16): kv_append, kv_attention, embedding_at, gather_rows; see
 * docs/deep-learning-ops.md ("kvcache group") and src/nn/inference/.
 */
import { type DType, epsilon } from '../../core/dtype.js';
import type { ConformanceCase } from '../case-types.js';
import { seededRandom } from '../../core/seeded-random.js';
import { embeddingAtCpu, gatherRowsCpu, kvAppendCpu, kvAttentionCpu } from '../kvcache/cpu.js';
import { embeddingAtCuda, gatherRowsCuda, kvAppendCuda, kvAttentionCuda } from '../kvcache/cuda.js';
import { embeddingAtDef, gatherRowsDef, kvAppendDef, kvAttentionDef } from '../kvcache/defs.js';
import {
  embeddingAtReference,
  gatherRowsReference,
  kvAppendReference,
  kvAttentionReference,
} from '../kvcache/reference.js';
import { topkRowsCpu, topkRowsCuda, topkRowsDef, topkRowsReference } from '../kvcache/topk.js';
import type { OpGroup } from './op-group.js';

const DTYPES: readonly DType[] = ['f32', 'f64', 'f16', 'bf16'];

/**
 * [rows M, slots S, positions P, heads H, head dim d]: odd sizes, d above the block size once; for
 * CUDA's vector text (16-bit, d = 8·2^k) d 8 to 256 and prefixes over several of its loop trips (P 300).
 */
const ATTENTION_SHAPES: readonly (readonly [number, number, number, number, number])[] = [
  [5, 3, 9, 2, 8],
  [7, 4, 33, 3, 16],
  [2, 2, 65, 1, 64],
  [9, 3, 17, 2, 12],
  [3, 2, 5, 1, 160],
  [6, 3, 70, 2, 32],
  [12, 2, 300, 2, 64],
  [5, 2, 40, 1, 256],
];

/** As the attention op's forward: sums of P (and d) terms in f32 (f64), one rounding on store. */
function attentionTolerance(
  dtype: DType,
  positions: number,
  headDim: number,
): { rtol: number; atol: number } {
  const work = dtype === 'f64' ? epsilon('f64') : epsilon('f32');
  const accumulate = 8 * (positions + headDim) * work;
  if (dtype === 'f32' || dtype === 'f64') return { rtol: 4 * epsilon(dtype), atol: accumulate };
  return { rtol: 2 * epsilon(dtype), atol: 2 * epsilon(dtype) + accumulate };
}

/** Distinct (slot, pos) pairs for kv_append (two rows writing one place would race), plus one outside. */
function appendTargets(
  rows: number,
  slots: number,
  positions: number,
  seed: number,
): { slot: number[]; pos: number[] } {
  const rnd = seededRandom(seed);
  const cells = Array.from({ length: slots * positions }, (_, i) => i);
  for (let i = cells.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [cells[i], cells[j]] = [cells[j]!, cells[i]!];
  }
  const picked = cells.slice(0, rows - 1);
  return {
    slot: [...picked.map((c) => Math.floor(c / positions)), slots],
    pos: [...picked.map((c) => c % positions), 0],
  };
}

function cases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const dtype of DTYPES) {
    for (const [M, S, P, H, d] of ATTENTION_SHAPES) {
      const C = H * d;
      const cache = { shape: [S, P, C], dtype };
      out.push({
        name: `kv_attention ${dtype} M${M} S${S} P${P} H${H} d${d}`,
        op: 'kv_attention',
        args: {
          qkv: { shape: [M, 3 * C], dtype },
          // slot −1 and pos P draw rows outside the cache: NaN rows.
          slot: { shape: [M], dtype: 'i32', range: 'index', min: -1, max: S },
          pos: { shape: [M], dtype: 'i32', range: 'index', max: P + 1 },
          kcache: cache,
          vcache: cache,
          y: { shape: [M, C], dtype },
        },
        scalars: { heads: H },
        ...attentionTolerance(dtype, P, d),
      });
    }
    const [M, S, P, C] = [11, 3, 7, 20];
    const t = appendTargets(M, S, P, 17);
    out.push({
      name: `kv_append ${dtype} M${M} S${S} P${P} C${C}`,
      op: 'kv_append',
      args: {
        qkv: { shape: [M, 3 * C], dtype },
        slot: { shape: [M], dtype: 'i32', values: t.slot },
        pos: { shape: [M], dtype: 'i32', values: t.pos },
        kcache: { shape: [S, P, C], dtype },
        vcache: { shape: [S, P, C], dtype },
      },
      scalars: {},
      rtol: 0,
      atol: 0,
    });
    out.push({
      name: `embedding_at ${dtype} M9 V11 P13 C33`,
      op: 'embedding_at',
      args: {
        ids: { shape: [9], dtype: 'i32', range: 'index', min: -1, max: 11 },
        pos: { shape: [9], dtype: 'i32', range: 'index', max: 14 },
        wte: { shape: [11, 33], dtype },
        wpe: { shape: [13, 33], dtype },
        y: { shape: [9, 33], dtype },
      },
      scalars: {},
      // One addition in f32 (f64) and one rounding.
      rtol: epsilon(dtype === 'f64' ? 'f64' : dtype),
      atol: 0,
    });
    out.push({
      name: `gather_rows ${dtype} M10 R6 C33`,
      op: 'gather_rows',
      args: {
        x: { shape: [10, 33], dtype },
        index: { shape: [6], dtype: 'i32', range: 'index', min: -1, max: 11 },
        y: { shape: [6, 33], dtype },
      },
      scalars: {},
      rtol: 0,
      atol: 0,
    });
    for (const [rows, cols, vocab, k] of [
      [3, 50, 47, 5],
      [2, 700, 700, 1],
      [4, 300, 290, 17],
      [1, 6, 6, 9],
    ] as const)
      out.push({
        name: `topk_rows ${dtype} R${rows} N${cols} V${vocab} k${k}`,
        op: 'topk_rows',
        // 'int' values repeat within a row, so ties (lower index first) are exercised; k > V pads.
        args: {
          x: { shape: [rows, cols], dtype, range: dtype === 'f16' || dtype === 'bf16' ? 'signed' : 'int' },
          values: { shape: [rows, k], dtype: 'f32' },
          indices: { shape: [rows, k], dtype: 'i32' },
        },
        scalars: { vocab },
        rtol: 0,
        atol: 0,
      });
  }
  return out;
}

export const kvcacheGroup: OpGroup = {
  name: 'kvcache',
  defs: [kvAppendDef, kvAttentionDef, embeddingAtDef, gatherRowsDef, topkRowsDef],
  impls: [
    { op: 'kv_append', backend: 'cpu', impl: kvAppendCpu },
    { op: 'kv_attention', backend: 'cpu', impl: kvAttentionCpu },
    { op: 'embedding_at', backend: 'cpu', impl: embeddingAtCpu },
    { op: 'gather_rows', backend: 'cpu', impl: gatherRowsCpu },
    { op: 'kv_append', backend: 'cuda', impl: kvAppendCuda },
    { op: 'kv_attention', backend: 'cuda', impl: kvAttentionCuda },
    { op: 'embedding_at', backend: 'cuda', impl: embeddingAtCuda },
    { op: 'gather_rows', backend: 'cuda', impl: gatherRowsCuda },
    { op: 'topk_rows', backend: 'cpu', impl: topkRowsCpu },
    { op: 'topk_rows', backend: 'cuda', impl: topkRowsCuda },
  ],
  references: {
    kv_append: kvAppendReference,
    kv_attention: kvAttentionReference,
    embedding_at: embeddingAtReference,
    gather_rows: gatherRowsReference,
    topk_rows: topkRowsReference,
  },
  cases,
};
