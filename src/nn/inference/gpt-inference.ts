/**
 * Forward-only GPT-2 (no autograd tape): the weights of a `Gpt` module (seeded init or a PyTorch
 * checkpoint through loadParameters) and the same kernels as training, in the model's precision.
 *
 * Two paths share the transformer blocks:
 * - `lastLogits`: whole sequences (padded on the right to the longest), causal flash attention, then
 *   only each sequence's last row goes through the final LayerNorm and the LM head (gather_rows): the
 *   scoring model. Right padding cannot change a real token's row under the causal mask.
 * - `step`: the KV-cache path. Rows of many sequences at once, each with its slot and position
 *   (prefill: a sequence's whole prompt; decode: one token per sequence; any mix in one launch);
 *   kv_append writes each layer's keys and values into the slots, kv_attention reads them.
 * Logits come back as f32 rows of the real vocabulary (the padded columns are dropped).
 */
import { type DType, type HostArray, toNumbers } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { GptConfig, Gpt } from '../models/gpt.js';
import { KvCache, type KvCacheOptions } from './kv-cache.js';
import { type InferenceRuntime, type RunPlace, Scope } from './scope.js';

const LN_EPS = 1e-5;

interface BlockWeights {
  readonly ln1: readonly [Tensor, Tensor];
  readonly attn: readonly [Tensor, Tensor];
  readonly proj: readonly [Tensor, Tensor];
  readonly ln2: readonly [Tensor, Tensor];
  readonly fc: readonly [Tensor, Tensor];
  readonly out: readonly [Tensor, Tensor];
}

/** One sequence's rows in a cached step: tokens at positions start, start + 1, … of cache slot `slot`. */
/** What comes back per sequence: the whole logit row, or only its k largest entries. */
export type Head = { readonly kind: 'logits' } | { readonly kind: 'topk'; readonly k: number };

export interface TopK {
  /** Token ids, most likely first. */
  readonly indices: Int32Array;
  /** Their logits. */
  readonly values: Float32Array;
}

export type HeadOutput<H extends Head> = H extends { kind: 'topk' } ? TopK : Float32Array;

/** f32 values of a read tensor: 16-bit words widened by a shift (bf16) or decoded (f16). */
function toF32(dtype: DType, raw: HostArray): Float32Array {
  if (dtype === 'f32') return raw as Float32Array;
  if (dtype === 'bf16') {
    const words = raw as Uint16Array;
    const out = new Uint32Array(words.length);
    for (let i = 0; i < words.length; i++) out[i] = words[i]! << 16;
    return new Float32Array(out.buffer);
  }
  return Float32Array.from(toNumbers(dtype, raw));
}

export interface CachedRun {
  readonly slot: number;
  readonly start: number;
  readonly tokens: readonly number[];
}

export class GptInference {
  readonly config: GptConfig;
  readonly dtype: DType;
  private readonly rt: InferenceRuntime;
  private readonly wte: Tensor;
  private readonly wpe: Tensor;
  private readonly blocks: readonly BlockWeights[];
  private readonly lnF: readonly [Tensor, Tensor];

  /**
   * @param sequences submit each forward pass as one runtime sequence (default) rather than a task per
   *   kernel: the same kernels in the same order, with the runtime's per-task host work paid once.
   */
  constructor(
    model: Gpt,
    rt?: InferenceRuntime,
    private readonly sequences = true,
  ) {
    this.config = model.config;
    this.dtype = model.nn.dtype;
    this.rt = rt ?? model.nn.rt;
    this.wte = model.wte.data;
    this.wpe = model.wpe.data;
    const pair = (w: { data: Tensor }, b: { data: Tensor } | null): readonly [Tensor, Tensor] => {
      if (b === null)
        throw new TandemError('TANDEM_ERR_INTERNAL', 'gpt inference: a linear layer without bias');
      return [w.data, b.data];
    };
    this.blocks = model.blocks.map((b) => ({
      ln1: pair(b.ln1.weight, b.ln1.bias),
      attn: pair(b.cAttn.weight, b.cAttn.bias),
      proj: pair(b.attnProj.weight, b.attnProj.bias),
      ln2: pair(b.ln2.weight, b.ln2.bias),
      fc: pair(b.cFc.weight, b.cFc.bias),
      out: pair(b.mlpProj.weight, b.mlpProj.bias),
    }));
    this.lnF = pair(model.lnF.weight, model.lnF.bias);
  }

  /** A KV cache for this model (its dtype and layers) on the model's runtime. */
  newCache(options: KvCacheOptions): KvCache {
    return new KvCache(this.rt, this.config, this.dtype, options);
  }

  /** Checks token ids (integers in [0, vocab)); throws TANDEM_ERR_INVALID_ARGUMENT naming the first bad one. */
  checkTokens(tokens: readonly number[], what = 'tokens'): void {
    const v = this.config.vocab;
    const bad = tokens.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= v);
    if (bad >= 0)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `${what}[${bad}] = ${String(tokens[bad])} is not a token id in [0, ${v})`,
        { index: bad },
      );
  }

  /** The logits after the last token of each sequence (each 1…context tokens long). */
  lastLogits(seqs: readonly (readonly number[])[], place: RunPlace = {}): Promise<Float32Array[]> {
    return this.last(seqs, { kind: 'logits' }, place);
  }

  /** `lastLogits`, returning what `head` asks for. */
  async last<H extends Head>(
    seqs: readonly (readonly number[])[],
    head: H,
    place: RunPlace = {},
  ): Promise<HeadOutput<H>[]> {
    const c = this.config;
    if (seqs.length === 0) return [];
    const t = Math.max(...seqs.map((s) => s.length));
    for (const [i, s] of seqs.entries()) {
      if (s.length < 1 || s.length > c.context)
        throw new TandemError(
          'TANDEM_ERR_LIMIT',
          `sequence ${i} has ${s.length} tokens; 1 to ${c.context} allowed`,
        );
      this.checkTokens(s, `sequence ${i}`);
    }
    const b = seqs.length;
    const ids = new Int32Array(b * t);
    seqs.forEach((s, i) => ids.set(s, i * t));
    const scope = new Scope(this.rt, place, this.sequences);
    try {
      const idT = scope.ints(ids, [b, t]);
      const x = scope.tensor([b * t, c.width], this.dtype);
      scope.run('embedding', { ids: idT, wte: this.wte, wpe: this.wpe, y: x });
      const lse = scope.tensor([b, c.heads, t], this.dtype === 'f64' ? 'f64' : 'f32');
      const last = seqs.map((s, i) => i * t + s.length - 1);
      const logits = this.finish(scope, x, b * t, last, (qkv, y) =>
        scope.run('attention', { qkv, y, lse }, { heads: c.heads, seq: t }),
      );
      return await this.readHead(scope, logits, head);
    } finally {
      scope.release();
    }
  }

  /**
   * One iteration of cached generation: appends every run's tokens to its slot and returns the logits
   * after each run's last token. Runs must name distinct slots; positions must fit the cache.
   */
  step(cache: KvCache, runs: readonly CachedRun[], place: RunPlace = {}): Promise<Float32Array[]> {
    return this.stepHead(cache, runs, { kind: 'logits' }, place);
  }

  /** `step`, returning what `head` asks for (k = 1: greedy decoding reads one id per sequence). */
  async stepHead<H extends Head>(
    cache: KvCache,
    runs: readonly CachedRun[],
    head: H,
    place: RunPlace = {},
  ): Promise<HeadOutput<H>[]> {
    const c = this.config;
    if (runs.length === 0) return [];
    if (cache.dtype !== this.dtype || cache.keys.length !== c.layers)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'gpt inference: the cache was made for another model',
      );
    const ids: number[] = [];
    const pos: number[] = [];
    const slot: number[] = [];
    const last: number[] = [];
    const seen = new Set<number>();
    for (const [i, r] of runs.entries()) {
      if (!Number.isInteger(r.slot) || r.slot < 0 || r.slot >= cache.slots || seen.has(r.slot))
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `run ${i}: slot ${r.slot} is not a distinct cache slot`,
        );
      seen.add(r.slot);
      if (
        r.tokens.length < 1 ||
        !Number.isInteger(r.start) ||
        r.start < 0 ||
        r.start + r.tokens.length > cache.positions
      )
        throw new TandemError(
          'TANDEM_ERR_LIMIT',
          `run ${i}: positions ${r.start}…${r.start + r.tokens.length - 1} do not fit the cache's ${cache.positions}`,
        );
      this.checkTokens(r.tokens, `run ${i} tokens`);
      r.tokens.forEach((tok, j) => {
        ids.push(tok);
        pos.push(r.start + j);
        slot.push(r.slot);
      });
      last.push(ids.length - 1);
    }
    const m = ids.length;
    const scope = new Scope(this.rt, place, this.sequences);
    try {
      const posT = scope.ints(pos);
      const slotT = scope.ints(slot);
      const x = scope.tensor([m, c.width], this.dtype);
      scope.run('embedding_at', { ids: scope.ints(ids), pos: posT, wte: this.wte, wpe: this.wpe, y: x });
      let layer = 0;
      const logits = this.finish(scope, x, m, last, (qkv, y) => {
        const kv = { qkv, slot: slotT, pos: posT, kcache: cache.keys[layer]!, vcache: cache.values[layer]! };
        scope.run('kv_append', kv);
        scope.run('kv_attention', { ...kv, y }, { heads: c.heads });
        layer++;
      });
      return await this.readHead(scope, logits, head);
    } finally {
      scope.release();
    }
  }

  /**
   * The transformer blocks over rows x [m, C] (attention given by `attend(qkv, y)`), then the final
   * LayerNorm and the LM head on the rows `last` only: the logits [R, paddedVocab], in the scope.
   */
  private finish(
    scope: Scope,
    x0: Tensor,
    m: number,
    last: readonly number[],
    attend: (qkv: Tensor, y: Tensor) => void,
  ): Tensor {
    const c = this.config;
    const dt = this.dtype;
    const stat = dt === 'f64' ? 'f64' : 'f32';
    let x = x0;
    let pending: Tensor | null = null; // a sublayer's output not yet added to the residual stream x
    const norm = (
      rows: number,
      [w, b]: readonly [Tensor, Tensor],
      xIn: Tensor,
      add: Tensor | null,
    ): { x: Tensor; y: Tensor } => {
      const y = scope.tensor([rows, c.width], dt);
      const mean = scope.tensor([rows], stat);
      const rstd = scope.tensor([rows], stat);
      if (add === null) {
        scope.run('layernorm', { x: xIn, w, b, y, mean, rstd }, { eps: LN_EPS });
        return { x: xIn, y };
      }
      const s = scope.tensor([rows, c.width], dt);
      scope.run('residual_layernorm', { a: add, r: xIn, s, w, b, y, mean, rstd }, { eps: LN_EPS });
      return { x: s, y };
    };
    const linear = (input: Tensor, [w, b]: readonly [Tensor, Tensor], cols: number): Tensor => {
      const y = scope.tensor([m, cols], dt);
      scope.run('linear', { x: input, w, b, y });
      return y;
    };
    for (const blk of this.blocks) {
      let r = norm(m, blk.ln1, x, pending);
      x = r.x;
      const qkv = linear(r.y, blk.attn, 3 * c.width);
      const att = scope.tensor([m, c.width], dt);
      attend(qkv, att);
      pending = linear(att, blk.proj, c.width);
      r = norm(m, blk.ln2, x, pending);
      x = r.x;
      const pre = scope.tensor([m, 4 * c.width], dt);
      const hidden = scope.tensor([m, 4 * c.width], dt);
      scope.run('linear_act', { x: r.y, w: blk.fc[0], b: blk.fc[1], pre, y: hidden }, { act: 'gelu' });
      pending = linear(hidden, blk.out, c.width);
    }
    // Only the wanted rows go on: the residual stream and the last sublayer's output, gathered.
    const rows = last.length;
    const index = scope.ints(last);
    const gx = scope.tensor([rows, c.width], dt);
    scope.run('gather_rows', { x, index, y: gx });
    let gp: Tensor | null = null;
    if (pending !== null) {
      gp = scope.tensor([rows, c.width], dt);
      scope.run('gather_rows', { x: pending, index, y: gp });
    }
    const h = norm(rows, this.lnF, gx, gp).y;
    const logits = scope.tensor([rows, c.paddedVocab], dt);
    scope.run('gemm', { a: h, b: this.wte, c: logits }, { transB: true });
    return logits;
  }

  /** Reads what `head` asks for from the logits rows [R, paddedVocab]. */
  private async readHead<H extends Head>(scope: Scope, logits: Tensor, head: H): Promise<HeadOutput<H>[]> {
    const c = this.config;
    const rows = logits.shape[0]!;
    if (head.kind === 'logits') {
      const values = toF32(this.dtype, await scope.read(logits));
      return Array.from(
        { length: rows },
        (_, i) => values.slice(i * c.paddedVocab, i * c.paddedVocab + c.vocab) as HeadOutput<H>,
      );
    }
    const k = head.k;
    const values = scope.tensor([rows, k], 'f32');
    const indices = scope.tensor([rows, k], 'i32');
    scope.run('topk_rows', { x: logits, values, indices }, { vocab: c.vocab });
    const [v, ix] = await Promise.all([scope.read(values), scope.read(indices)]);
    return Array.from({ length: rows }, (_, i) => ({
      values: (v as Float32Array).slice(i * k, (i + 1) * k),
      indices: (ix as Int32Array).slice(i * k, (i + 1) * k),
    })) as HeadOutput<H>[];
  }
}
