/**
 * Continuous (iteration-level) batching for GPT generation, as Orca and vLLM do it: one loop of steps,
 * each a single cached forward over every live sequence (one decode row each) plus the prompts of the
 * sequences admitted at that step (prefill rows), all in one ragged launch set. A sequence joins at the
 * next step after a slot frees and leaves as soon as it finishes, so short requests never wait for long
 * ones (static batching's padding to the longest).
 *
 * Limits: live sequences ≤ cache slots (`maxSequences`, further capped by `maxCacheBytes`); requests
 * waiting for a slot ≤ `maxWaiting` (beyond: TANDEM_ERR_OVERLOADED, HTTP 429); prompt + max tokens ≤
 * `maxLength` ≤ the context (TANDEM_ERR_LIMIT, 400). An aborted request leaves the queue at once, or,
 * when live, is dropped at the next step boundary and its slot is reused.
 */
import { TandemError } from '../../../core/errors.js';
import { type GptInference, KvCache, Sampler, type SamplingOptions } from '../../../nn/inference/index.js';
import type { CachedRun, RunPlace } from '../../../nn/inference/index.js';

export interface GenerationEngineOptions {
  /** Live sequences at once (KV-cache slots). */
  readonly maxSequences: number;
  /** Positions per sequence: prompt plus generated tokens (default and maximum: the context). */
  readonly maxLength?: number;
  /** Bytes the KV cache may hold; the slot count is lowered to fit. Default: no cap beyond maxSequences. */
  readonly maxCacheBytes?: number;
  /** Requests waiting for a slot (default 4 × slots); one more is refused with TANDEM_ERR_OVERLOADED. */
  readonly maxWaiting?: number;
  /** Prompt tokens admitted into one step (default 4096); one sequence is always admitted if a slot is free. */
  readonly prefillTokensPerStep?: number;
  /** Where each step's kernels run (the model's placement rule), asked at every step. */
  readonly place?: () => RunPlace;
}

export interface GenerateRequest {
  readonly prompt: readonly number[];
  /** Tokens to generate at most (≥ 1). */
  readonly maxTokens: number;
  readonly sampling?: SamplingOptions;
  /** Tokens that end the sequence (not included in the output): e.g. GPT-2's <|endoftext|>. */
  readonly stopTokens?: readonly number[];
  readonly signal?: AbortSignal;
  /** Each new token as it is made (streaming). Returning true ends the sequence with 'stop'. */
  readonly onToken?: (token: number, index: number) => boolean | void;
}

export type FinishReason = 'stop' | 'length';

export interface GenerateResult {
  readonly tokens: number[];
  readonly finishReason: FinishReason;
  readonly promptTokens: number;
  /** Milliseconds from the request to its admission, to its first token, and to its end. */
  readonly queueMs: number;
  readonly firstTokenMs: number;
  readonly totalMs: number;
}

export interface EngineStats {
  readonly slots: number;
  readonly live: number;
  readonly waiting: number;
  readonly freeSlots: number;
  readonly steps: number;
  readonly generatedTokens: number;
  readonly cacheBytes: number;
  /**
   * Milliseconds spent in steps: `stepMs` from each step's start to its tokens (forward, head, read),
   * `submitMs` the synchronous part of that (the host building and enqueueing the step's kernels).
   */
  readonly stepMs: number;
  readonly submitMs: number;
}

interface Sequence {
  readonly req: GenerateRequest;
  readonly sampler: Sampler;
  readonly stop: ReadonlySet<number>;
  readonly t0: number;
  readonly resolve: (r: GenerateResult) => void;
  readonly reject: (e: unknown) => void;
  readonly unlisten: () => void;
  slot: number;
  tokens: number[];
  admittedAt: number;
  firstAt: number;
  aborted: boolean;
}

function cancelled(): TandemError {
  return new TandemError('TANDEM_ERR_CANCELLED', 'the request was aborted by its client');
}

export class GenerationEngine {
  readonly maxLength: number;
  private readonly cache: KvCache;
  private readonly maxWaiting: number;
  private readonly prefillBudget: number;
  private readonly waiting: Sequence[] = [];
  private readonly live: Sequence[] = [];
  private loop: Promise<void> | null = null;
  private closed = false;
  private steps = 0;
  private generated = 0;
  private stepMs = 0;
  private submitMs = 0;

  constructor(
    readonly model: GptInference,
    private readonly options: GenerationEngineOptions,
  ) {
    const c = model.config;
    const maxLength = options.maxLength ?? c.context;
    if (!Number.isInteger(maxLength) || maxLength < 2 || maxLength > c.context)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `generation: maxLength must be an integer in [2, ${c.context}]`,
      );
    let slots = options.maxSequences;
    if (!Number.isInteger(slots) || slots < 1)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'generation: maxSequences must be a positive integer',
      );
    if (options.maxCacheBytes !== undefined) {
      const perSlot = KvCache.bytes(c, model.dtype, { slots: 1, positions: maxLength });
      slots = Math.min(slots, Math.floor(options.maxCacheBytes / perSlot));
      if (slots < 1)
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `generation: maxCacheBytes ${options.maxCacheBytes} holds no sequence of ${maxLength} positions (${perSlot} B each)`,
        );
    }
    this.maxLength = maxLength;
    this.maxWaiting = options.maxWaiting ?? 4 * slots;
    this.prefillBudget = options.prefillTokensPerStep ?? 4096;
    this.cache = model.newCache({ slots, positions: maxLength });
  }

  stats(): EngineStats {
    return {
      slots: this.cache.slots,
      live: this.live.length,
      waiting: this.waiting.length,
      freeSlots: this.cache.freeSlots,
      steps: this.steps,
      generatedTokens: this.generated,
      cacheBytes: this.cache.bytes,
      stepMs: this.stepMs,
      submitMs: this.submitMs,
    };
  }

  /** Generates one sequence; settles when it finishes (rejects on abort, bad input or a full queue). */
  generate(req: GenerateRequest): Promise<GenerateResult> {
    return new Promise<GenerateResult>((resolve, reject) => {
      if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', 'the generation engine is closed');
      this.check(req);
      if (req.signal?.aborted === true) throw cancelled();
      if (this.waiting.length >= this.maxWaiting)
        throw new TandemError(
          'TANDEM_ERR_OVERLOADED',
          `generation: ${this.live.length} sequences live and ${this.waiting.length} waiting (the limit)`,
          { retryAfterSeconds: 1 },
        );
      const onAbort = (): void => this.abort(seq);
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const seq: Sequence = {
        req,
        sampler: new Sampler(req.sampling ?? {}),
        stop: new Set(req.stopTokens ?? []),
        t0: performance.now(),
        resolve,
        reject,
        unlisten: () => req.signal?.removeEventListener('abort', onAbort),
        slot: -1,
        tokens: [],
        admittedAt: 0,
        firstAt: 0,
        aborted: false,
      };
      this.waiting.push(seq);
      this.kick();
    });
  }

  /** Stops admitting, fails what is queued or live with TANDEM_ERR_CLOSED, frees the cache. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new TandemError('TANDEM_ERR_CLOSED', 'the generation engine is closed');
    for (const s of this.waiting.splice(0)) this.settle(s, err);
    await this.loop;
    for (const s of this.live.splice(0)) this.settle(s, err);
    this.model.releaseCache(this.cache);
    this.cache.dispose();
  }

  private check(req: GenerateRequest): void {
    const n = req.prompt.length;
    if (n < 1) throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'the prompt has no tokens');
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `max_tokens must be a positive integer, got ${req.maxTokens}`,
      );
    if (n + req.maxTokens > this.maxLength)
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `prompt (${n} tokens) + max_tokens (${req.maxTokens}) exceeds the model's ${this.maxLength} positions`,
        { promptTokens: n, maxTokens: req.maxTokens, limit: this.maxLength },
      );
    this.model.checkTokens(req.prompt, 'prompt');
  }

  private abort(seq: Sequence): void {
    if (seq.aborted) return;
    seq.aborted = true;
    const i = this.waiting.indexOf(seq);
    // Waiting: leaves now. Live: dropped by the loop at the next step boundary (a step may be in flight).
    if (i >= 0) {
      this.waiting.splice(i, 1);
      this.settle(seq, cancelled());
    }
  }

  private settle(seq: Sequence, outcome: GenerateResult | Error): void {
    seq.unlisten();
    if (seq.slot >= 0) {
      this.cache.release(seq.slot);
      seq.slot = -1;
    }
    if (outcome instanceof Error) seq.reject(outcome);
    else seq.resolve(outcome);
  }

  private finish(seq: Sequence, reason: FinishReason): void {
    const now = performance.now();
    this.settle(seq, {
      tokens: seq.tokens,
      finishReason: reason,
      promptTokens: seq.req.prompt.length,
      queueMs: seq.admittedAt - seq.t0,
      firstTokenMs: seq.firstAt - seq.t0,
      totalMs: now - seq.t0,
    });
  }

  private kick(): void {
    if (this.loop !== null) return;
    this.loop = this.run()
      .catch((e: unknown) => {
        // The loop itself never throws (step failures fail their sequences); this is a last resort.
        for (const s of [...this.live.splice(0), ...this.waiting.splice(0)]) this.settle(s, e as Error);
      })
      .finally(() => {
        this.loop = null;
        if (!this.closed && this.waiting.length > 0) this.kick();
      });
  }

  private async run(): Promise<void> {
    while (!this.closed && (this.live.length > 0 || this.waiting.length > 0)) {
      for (const s of this.live.filter((x) => x.aborted)) {
        this.live.splice(this.live.indexOf(s), 1);
        this.settle(s, cancelled());
      }
      const runs: CachedRun[] = this.live.map((s) => ({
        slot: s.slot,
        start: s.req.prompt.length + s.tokens.length - 1,
        tokens: [s.tokens.at(-1)!],
      }));
      const stepSeqs = [...this.live];
      let budget = this.prefillBudget;
      while (this.waiting.length > 0 && this.cache.freeSlots > 0) {
        const next = this.waiting[0]!;
        if (next.req.prompt.length > budget && stepSeqs.length > this.live.length) break;
        this.waiting.shift();
        budget -= next.req.prompt.length;
        next.slot = this.cache.acquire()!;
        next.admittedAt = performance.now();
        this.live.push(next);
        stepSeqs.push(next);
        runs.push({ slot: next.slot, start: 0, tokens: next.req.prompt });
      }
      if (runs.length === 0) return;
      await this.step(stepSeqs, runs);
      this.steps++;
    }
  }

  /** One iteration: the forward, then each sequence's next token, its callbacks and whether it ends. */
  private async step(seqs: readonly Sequence[], runs: readonly CachedRun[]): Promise<void> {
    const place = this.options.place?.() ?? {};
    let next: number[];
    const t0 = performance.now();
    try {
      if (seqs.every((s) => s.sampler.greedy)) {
        const pending = this.model.stepHead(this.cache, runs, { kind: 'topk', k: 1 }, place);
        this.submitMs += performance.now() - t0;
        next = (await pending).map((t) => t.indices[0]!);
      } else {
        const pending = this.model.step(this.cache, runs, place);
        this.submitMs += performance.now() - t0;
        next = (await pending).map((row, i) => seqs[i]!.sampler.next(row));
      }
      this.stepMs += performance.now() - t0;
    } catch (e) {
      for (const s of seqs) {
        this.live.splice(this.live.indexOf(s), 1);
        this.settle(s, e instanceof Error ? e : new TandemError('TANDEM_ERR_INTERNAL', String(e)));
      }
      return;
    }
    const now = performance.now();
    for (const [i, s] of seqs.entries()) {
      if (s.aborted) continue; // dropped at the next step boundary
      const token = next[i]!;
      if (s.tokens.length === 0) s.firstAt = now;
      let reason: FinishReason | null = null;
      if (s.stop.has(token)) reason = 'stop';
      else {
        s.tokens.push(token);
        this.generated++;
        let stopNow = false;
        try {
          stopNow = s.req.onToken?.(token, s.tokens.length - 1) === true;
        } catch {
          stopNow = true; // a failing listener (a closed stream) ends its own sequence only
        }
        if (stopNow) reason = 'stop';
        else if (s.tokens.length >= s.req.maxTokens) reason = 'length';
      }
      if (reason !== null) {
        this.live.splice(this.live.indexOf(s), 1);
        this.finish(s, reason);
      }
    }
  }
}
