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
 *   kv_append writes each layer's keys and values into the slots, kv_attention reads them. A decode
 *   step (one token per sequence) runs from a kept plan per bucketed row count, as scoring shapes do.
 * The blocks themselves are in blocks.ts. Logits come back as f32 rows of the real vocabulary (the
 * padded columns are dropped).
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { GptConfig, Gpt } from '../models/gpt.js';
import { type ModelWeights, forwardBlocks } from './blocks.js';
import { type Head, type HeadOutput, formatHead, headTensors } from './heads.js';
import { KvCache, type KvCacheOptions } from './kv-cache.js';
import {
  DEFAULT_PLAN_LIMITS,
  type ScorePlanLimits,
  ScorePlans,
  bucketUp,
  planShape,
  runKeptPlan,
} from './score-plans.js';
import { type InferenceRuntime, type RunPlace, Scope } from './scope.js';

export type { Head, HeadOutput, TopK } from './heads.js';

/** How a GptInference submits its passes. */
export interface GptInferenceOptions {
  /**
   * Submit each forward pass as one runtime sequence (default) rather than a task per kernel: the same
   * kernels in the same order, with the runtime's per-task host work paid once; scoring shapes seen
   * before then run from a kept plan (score-plans.ts).
   */
  readonly sequences?: boolean;
  /** Which scoring shapes get kept plans, and how many bytes they may hold (DEFAULT_PLAN_LIMITS). */
  readonly plans?: Partial<ScorePlanLimits>;
}

/** One sequence's rows in a cached step: tokens at positions start, start + 1, … of cache slot `slot`. */
export interface CachedRun {
  readonly slot: number;
  readonly start: number;
  readonly tokens: readonly number[];
}

/** A head's part of a plan's name. */
function headName(head: Head): string {
  return head.kind === 'topk' ? `top${head.k}` : 'logits';
}

export class GptInference {
  readonly config: GptConfig;
  readonly dtype: DType;
  private readonly rt: InferenceRuntime;
  private readonly wte: Tensor;
  private readonly wpe: Tensor;
  private readonly weights: ModelWeights;
  /** Kept scoring passes for repeated shapes (sequence mode). */
  private readonly plans: ScorePlans;
  /** Kept decode steps per bucketed row count and KV cache (sequence mode). */
  private readonly decodePlans: ScorePlans;
  private readonly sequences: boolean;

  /** `dispose()` frees the kept plans; the model's weights stay the caller's. */
  constructor(model: Gpt, rt?: InferenceRuntime, options: GptInferenceOptions = {}) {
    this.config = model.config;
    this.dtype = model.nn.dtype;
    this.rt = rt ?? model.nn.rt;
    this.sequences = options.sequences ?? true;
    this.plans = new ScorePlans((t) => this.rt.free(t), { ...DEFAULT_PLAN_LIMITS, ...options.plans });
    this.decodePlans = new ScorePlans((t) => this.rt.free(t), { ...DEFAULT_PLAN_LIMITS, ...options.plans });
    this.wte = model.wte.data;
    this.wpe = model.wpe.data;
    const pair = (w: { data: Tensor }, b: { data: Tensor } | null): readonly [Tensor, Tensor] => {
      if (b === null)
        throw new TandemError('TANDEM_ERR_INTERNAL', 'gpt inference: a linear layer without bias');
      return [w.data, b.data];
    };
    this.weights = {
      config: this.config,
      dtype: this.dtype,
      wte: this.wte,
      blocks: model.blocks.map((b) => ({
        ln1: pair(b.ln1.weight, b.ln1.bias),
        attn: pair(b.cAttn.weight, b.cAttn.bias),
        proj: pair(b.attnProj.weight, b.attnProj.bias),
        ln2: pair(b.ln2.weight, b.ln2.bias),
        fc: pair(b.cFc.weight, b.cFc.bias),
        out: pair(b.mlpProj.weight, b.mlpProj.bias),
      })),
      lnF: pair(model.lnF.weight, model.lnF.bias),
    };
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
    const shape = this.sequences ? planShape(b, t, c.context, this.plans.limits) : null;
    // Rows past the b sequences (a bucketed shape's padding) hold token 0 and read their first row.
    const rows = shape?.b ?? b;
    const len = shape?.t ?? t;
    const ids = new Int32Array(rows * len);
    seqs.forEach((s, i) => ids.set(s, i * len));
    const lastRows = Int32Array.from({ length: rows }, (_, i) => i * len + (seqs[i]?.length ?? 1) - 1);
    if (shape !== null) return this.lastPlanned(b, shape, ids, lastRows, head, place);
    const scope = new Scope(this.rt, place, this.sequences);
    try {
      const pass = this.scoreForward(scope, b, t, ids, lastRows, head);
      return formatHead(
        this.config,
        this.dtype,
        head,
        b,
        await Promise.all(pass.outputs.map((o) => scope.read(o))),
      );
    } finally {
      scope.release();
    }
  }

  /** Scoring plans kept now, and the bytes their tensors hold (the limits: `plans` in the options). */
  get keptPlans(): { readonly count: number; readonly bytes: number } {
    return { count: this.plans.size, bytes: this.plans.heldBytes };
  }

  /** Decode-step plans kept now (per bucketed row count, head, device and cache), and their bytes. */
  get keptDecodePlans(): { readonly count: number; readonly bytes: number } {
    return { count: this.decodePlans.size, bytes: this.decodePlans.heldBytes };
  }

  /** Frees the kept forward passes (see score-plans.ts); the model's own weights are the caller's. */
  dispose(): void {
    this.plans.dispose();
    this.decodePlans.dispose();
  }

  /** The scoring pass in `scope`: its input tensors and the tensors to read for `head`. */
  private scoreForward(
    scope: Scope,
    b: number,
    t: number,
    ids: Int32Array,
    lastRows: Int32Array,
    head: Head,
  ): { ids: Tensor; index: Tensor; outputs: Tensor[] } {
    const c = this.config;
    const idT = scope.ints(ids, [b, t]);
    const x = scope.tensor([b * t, c.width], this.dtype);
    scope.run('embedding', { ids: idT, wte: this.wte, wpe: this.wpe, y: x });
    const lse = scope.tensor([b, c.heads, t], this.dtype === 'f64' ? 'f64' : 'f32');
    const index = scope.ints(lastRows);
    const logits = forwardBlocks(scope, this.weights, x, b * t, index, (qkv, y) =>
      scope.run('attention', { qkv, y, lse }, { heads: c.heads, seq: t }),
    );
    return { ids: idT, index, outputs: headTensors(scope, logits, head, this.config.vocab) };
  }

  /**
   * A scoring pass of b sequences through a kept plan for `shape` (made on first use; its padding rows
   * are computed and not returned).
   */
  private async lastPlanned<H extends Head>(
    b: number,
    shape: { readonly b: number; readonly t: number },
    ids: Int32Array,
    lastRows: Int32Array,
    head: H,
    place: RunPlace,
  ): Promise<HeadOutput<H>[]> {
    const name = `${shape.b}x${shape.t}|${headName(head)}|${place.device ?? ''}`;
    const read = await runKeptPlan(this.rt, this.plans, name, place, [ids, lastRows], (key) => {
      const scope = new Scope(this.rt, place, true);
      try {
        const pass = this.scoreForward(scope, shape.b, shape.t, ids, lastRows, head);
        const prepared = scope.prepare(`score ${key}`);
        return { inputs: [pass.ids, pass.index], outputs: pass.outputs, prepared, tensors: scope.adopt() };
      } finally {
        scope.release();
      }
    });
    return formatHead(this.config, this.dtype, head, b, read);
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
    // A decode step (one token per sequence) through a kept plan: the host's cost of a pass of ~100
    // kernels is paid once per bucketed row count, not once per token.
    const limits = this.decodePlans.limits;
    const planRows = limits.bucketed ? bucketUp(runs.length) : runs.length;
    if (this.sequences && ids.length === runs.length && planRows <= limits.maxRows)
      return this.stepPlanned(cache, ids, pos, slot, head, place);
    const scope = new Scope(this.rt, place, this.sequences);
    try {
      const pass = this.cachedForward(scope, cache, ids, pos, slot, last, head);
      return formatHead(
        this.config,
        this.dtype,
        head,
        runs.length,
        await Promise.all(pass.outputs.map((o) => scope.read(o))),
      );
    } finally {
      scope.release();
    }
  }

  /** Forgets the kept decode plans over `cache` (call before disposing it). */
  releaseCache(cache: KvCache): void {
    this.decodePlans.dropWhere((key) => key.includes(`|cache${cache.id}#`));
  }

  /** The cached pass in `scope`: its inputs (ids, positions, slots) and the tensors to read for `head`. */
  private cachedForward(
    scope: Scope,
    cache: KvCache,
    ids: readonly number[] | Int32Array,
    pos: readonly number[] | Int32Array,
    slot: readonly number[] | Int32Array,
    last: readonly number[] | Int32Array,
    head: Head,
  ): { inputs: Tensor[]; outputs: Tensor[] } {
    const c = this.config;
    const m = ids.length;
    const idsT = scope.ints(ids);
    const posT = scope.ints(pos);
    const slotT = scope.ints(slot);
    const x = scope.tensor([m, c.width], this.dtype);
    scope.run('embedding_at', { ids: idsT, pos: posT, wte: this.wte, wpe: this.wpe, y: x });
    let layer = 0;
    const logits = forwardBlocks(scope, this.weights, x, m, scope.ints(last), (qkv, y) => {
      const kv = { qkv, slot: slotT, pos: posT, kcache: cache.keys[layer]!, vcache: cache.values[layer]! };
      scope.run('kv_append', kv);
      scope.run('kv_attention', { ...kv, y }, { heads: c.heads });
      layer++;
    });
    return { inputs: [idsT, posT, slotT], outputs: headTensors(scope, logits, head, this.config.vocab) };
  }

  /**
   * A decode step through the kept plan for its bucketed row count (bucketUp: at most a fifth padding).
   * Padding rows hold token 0 at position 0 of slot −1: kv_append skips them and kv_attention gives them
   * NaN rows, which stay in their own rows (every later kernel is row-wise) and are not returned.
   */
  private async stepPlanned<H extends Head>(
    cache: KvCache,
    ids: readonly number[],
    pos: readonly number[],
    slot: readonly number[],
    head: H,
    place: RunPlace,
  ): Promise<HeadOutput<H>[]> {
    const m = ids.length;
    const rows = this.decodePlans.limits.bucketed ? bucketUp(m) : m; // ≤ maxRows (stepHead checks)
    const padded = (xs: readonly number[], fill: number): Int32Array => {
      const a = new Int32Array(rows).fill(fill);
      a.set(xs);
      return a;
    };
    const inputs = [padded(ids, 0), padded(pos, 0), padded(slot, -1)] as const;
    const name = `decode ${rows}|${headName(head)}|${place.device ?? ''}|cache${cache.id}`;
    const read = await runKeptPlan(this.rt, this.decodePlans, name, place, inputs, (key) => {
      const scope = new Scope(this.rt, place, true);
      try {
        const last = Int32Array.from({ length: rows }, (_, i) => i);
        const pass = this.cachedForward(scope, cache, inputs[0], inputs[1], inputs[2], last, head);
        const prepared = scope.prepare(`decode ${key}`);
        return { inputs: pass.inputs, outputs: pass.outputs, prepared, tensors: scope.adopt() };
      } finally {
        scope.release();
      }
    });
    return formatHead(this.config, this.dtype, head, m, read);
  }
}
