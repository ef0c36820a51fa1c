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
import type { DType, HostArray } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { GptConfig, Gpt } from '../models/gpt.js';
import { type Head, type HeadOutput, formatHead, headTensors } from './heads.js';
import { KvCache, type KvCacheOptions } from './kv-cache.js';
import { DEFAULT_PLAN_LIMITS, type ScorePlanLimits, ScorePlans, planShape } from './score-plans.js';
import { type InferenceRuntime, type RunPlace, Scope } from './scope.js';

export type { Head, HeadOutput, TopK } from './heads.js';

const LN_EPS = 1e-5;

interface BlockWeights {
  readonly ln1: readonly [Tensor, Tensor];
  readonly attn: readonly [Tensor, Tensor];
  readonly proj: readonly [Tensor, Tensor];
  readonly ln2: readonly [Tensor, Tensor];
  readonly fc: readonly [Tensor, Tensor];
  readonly out: readonly [Tensor, Tensor];
}

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

export class GptInference {
  readonly config: GptConfig;
  readonly dtype: DType;
  private readonly rt: InferenceRuntime;
  private readonly wte: Tensor;
  private readonly wpe: Tensor;
  private readonly blocks: readonly BlockWeights[];
  private readonly lnF: readonly [Tensor, Tensor];
  /** Kept scoring passes for repeated shapes (sequence mode). */
  private readonly plans: ScorePlans;
  private readonly sequences: boolean;

  /** `dispose()` frees the kept plans; the model's weights stay the caller's. */
  constructor(model: Gpt, rt?: InferenceRuntime, options: GptInferenceOptions = {}) {
    this.config = model.config;
    this.dtype = model.nn.dtype;
    this.rt = rt ?? model.nn.rt;
    this.sequences = options.sequences ?? true;
    this.plans = new ScorePlans((t) => this.rt.free(t), { ...DEFAULT_PLAN_LIMITS, ...options.plans });
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

  /** Plans kept now, and the bytes their tensors hold (the limits: `plans` in the options). */
  get keptPlans(): { readonly count: number; readonly bytes: number } {
    return { count: this.plans.size, bytes: this.plans.heldBytes };
  }

  /** Frees the kept forward passes (see score-plans.ts); the model's own weights are the caller's. */
  dispose(): void {
    this.plans.dispose();
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
    const logits = this.finish(scope, x, b * t, index, (qkv, y) =>
      scope.run('attention', { qkv, y, lse }, { heads: c.heads, seq: t }),
    );
    return { ids: idT, index, outputs: headTensors(scope, logits, head, this.config.vocab) };
  }

  /**
   * A scoring pass of b sequences through a kept plan for `shape` (made on first use; its padding rows
   * are computed and not returned): the token ids and row indices written into the plan's inputs, its
   * prepared sequence run again, its outputs read. A failed run drops the plan (its tensors are left
   * failed, as any task's outputs are).
   */
  private async lastPlanned<H extends Head>(
    b: number,
    shape: { readonly b: number; readonly t: number },
    ids: Int32Array,
    lastRows: Int32Array,
    head: H,
    place: RunPlace,
  ): Promise<HeadOutput<H>[]> {
    const name = `${shape.b}x${shape.t}|${head.kind === 'topk' ? `top${head.k}` : 'logits'}|${place.device ?? ''}`;
    const picked = this.plans.pick(name);
    const key = picked.key;
    let plan = picked.plan;
    const writes: Promise<void>[] = [];
    if (plan === undefined) {
      const scope = new Scope(this.rt, place, true);
      try {
        const pass = this.scoreForward(scope, shape.b, shape.t, ids, lastRows, head);
        const prepared = scope.prepare(`score ${key}`);
        plan = { ...pass, prepared, tensors: scope.adopt() };
      } finally {
        scope.release();
      }
      this.plans.add(key, plan);
    } else writes.push(this.rt.write(plan.ids, ids), this.rt.write(plan.index, lastRows));
    const end = this.plans.begin(key);
    try {
      // Submitted in one turn, in this order: the runtime orders runs of one plan by its tensors.
      const run = this.rt.submitPrepared(plan.prepared, place.tags);
      const reads = plan.outputs.map((o) => this.rt.read(o));
      const done = await Promise.all([...writes, run.done, ...reads]);
      return formatHead(this.config, this.dtype, head, b, done.slice(writes.length + 1) as HostArray[]);
    } catch (e) {
      this.plans.drop(key);
      throw e;
    } finally {
      end();
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
      const logits = this.finish(scope, x, m, scope.ints(last), (qkv, y) => {
        const kv = { qkv, slot: slotT, pos: posT, kcache: cache.keys[layer]!, vcache: cache.values[layer]! };
        scope.run('kv_append', kv);
        scope.run('kv_attention', { ...kv, y }, { heads: c.heads });
        layer++;
      });
      const outputs = headTensors(scope, logits, head, this.config.vocab);
      return formatHead(
        this.config,
        this.dtype,
        head,
        runs.length,
        await Promise.all(outputs.map((o) => scope.read(o))),
      );
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
    index: Tensor,
    attend: (qkv: Tensor, y: Tensor) => void,
  ): Tensor {
    const c = this.config;
    const dt = this.dtype;
    const stat = dt === 'f64' ? 'f64' : 'f32';
    // One buffer per role for all blocks (a block's temporaries are dead once the next one starts; the
    // runtime orders the reuse by the data): a forward's working set is two blocks', not twelve.
    const roles = new Map<string, Tensor>();
    const buffer = (role: string, shape: readonly number[], dtype = dt): Tensor => {
      let t = roles.get(role);
      if (t === undefined) roles.set(role, (t = scope.tensor(shape, dtype)));
      return t;
    };
    let residual = 0; // the residual stream alternates between two buffers (s is never r)
    let x = x0;
    let pending: Tensor | null = null; // a sublayer's output not yet added to the residual stream x
    const norm = (
      rows: number,
      [w, b]: readonly [Tensor, Tensor],
      xIn: Tensor,
      add: Tensor | null,
    ): { x: Tensor; y: Tensor } => {
      const y = buffer(`y${rows}`, [rows, c.width]);
      const mean = buffer(`mean${rows}`, [rows], stat);
      const rstd = buffer(`rstd${rows}`, [rows], stat);
      if (add === null) {
        scope.run('layernorm', { x: xIn, w, b, y, mean, rstd }, { eps: LN_EPS });
        return { x: xIn, y };
      }
      const s = buffer(`s${rows}.${residual++ % 2}`, [rows, c.width]);
      scope.run('residual_layernorm', { a: add, r: xIn, s, w, b, y, mean, rstd }, { eps: LN_EPS });
      return { x: s, y };
    };
    const linear = (input: Tensor, [w, b]: readonly [Tensor, Tensor], role: string, cols: number): Tensor => {
      const y = buffer(role, [m, cols]);
      scope.run('linear', { x: input, w, b, y });
      return y;
    };
    for (const blk of this.blocks) {
      let r = norm(m, blk.ln1, x, pending);
      x = r.x;
      const qkv = linear(r.y, blk.attn, 'qkv', 3 * c.width);
      const att = buffer('att', [m, c.width]);
      attend(qkv, att);
      pending = linear(att, blk.proj, 'pending', c.width);
      r = norm(m, blk.ln2, x, pending);
      x = r.x;
      const pre = buffer('pre', [m, 4 * c.width]);
      const hidden = buffer('hidden', [m, 4 * c.width]);
      scope.run('linear_act', { x: r.y, w: blk.fc[0], b: blk.fc[1], pre, y: hidden }, { act: 'gelu' });
      pending = linear(hidden, blk.out, 'pending', c.width);
    }
    // Only the wanted rows go on: the residual stream and the last sublayer's output, gathered.
    const rows = index.shape[0]!;
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
}
