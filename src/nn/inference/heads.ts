/**
 * What a forward pass hands back per sequence (the "head"): the whole logit row over the real
 * vocabulary, or only its k largest entries found on the device (`topk_rows`: R·k numbers leave the GPU
 * instead of R·vocab). Shared by the scoring and the cached-generation paths of GptInference.
 */
import type { DType, HostArray } from '../../core/dtype.js';
import { halvesToF32 } from '../../core/half.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Scope } from './scope.js';

/** What comes back per sequence: the whole logit row, or only its k largest entries. */
export type Head = { readonly kind: 'logits' } | { readonly kind: 'topk'; readonly k: number };

export interface TopK {
  /** Token ids, most likely first. */
  readonly indices: Int32Array;
  /** Their logits. */
  readonly values: Float32Array;
}

export type HeadOutput<H extends Head> = H extends { kind: 'topk' } ? TopK : Float32Array;

/** The vocabulary sizes a head needs: the real one and the padded width of the logit rows. */
interface Vocab {
  readonly vocab: number;
  readonly paddedVocab: number;
}

/** f32 values of a read tensor: 16-bit words widened by a shift (bf16) or a table (f16). */
function toF32(dtype: DType, raw: HostArray): Float32Array {
  if (dtype === 'f16' || dtype === 'bf16') return halvesToF32(dtype, raw as Uint16Array);
  return dtype === 'f32' ? (raw as Float32Array) : Float32Array.from(raw);
}

/** The tensors to read for `head` from the logits rows [R, paddedVocab] (top-k runs on the device). */
export function headTensors(scope: Scope, logits: Tensor, head: Head, vocab: number): Tensor[] {
  if (head.kind === 'logits') return [logits];
  const rows = logits.shape[0]!;
  const values = scope.tensor([rows, head.k], 'f32');
  const indices = scope.tensor([rows, head.k], 'i32');
  scope.run('topk_rows', { x: logits, values, indices }, { vocab });
  return [values, indices];
}

/**
 * What `head` asks for, for the first `rows` rows, from the host copies of `headTensors`' tensors (rows
 * past them — a bucketed plan's padding — are not returned).
 */
export function formatHead<H extends Head>(
  c: Vocab,
  dtype: DType,
  head: H,
  rows: number,
  read: readonly HostArray[],
): HeadOutput<H>[] {
  if (head.kind === 'logits') {
    const values = toF32(dtype, read[0]!);
    return Array.from(
      { length: rows },
      (_, i) => values.slice(i * c.paddedVocab, i * c.paddedVocab + c.vocab) as HeadOutput<H>,
    );
  }
  const k = head.k;
  const v = read[0] as Float32Array;
  const ix = read[1] as Int32Array;
  return Array.from({ length: rows }, (_, i) => ({
    values: v.slice(i * k, (i + 1) * k),
    indices: ix.slice(i * k, (i + 1) * k),
  })) as HeadOutput<H>[];
}
