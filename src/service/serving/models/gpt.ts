/**
 * Model kind 'gpt': GPT-2-style models served two ways.
 * - Scoring through the interactive lane (`POST /v1/models/{name}/infer`): one item is `{tokens}` (or
 *   `{text}`), 1…context tokens; a batch of up to 64 is padded on the right to its longest item and run as
 *   one causal forward; each item gets the top-k of its last token's logits (device-side top-k: only
 *   R·k numbers leave the GPU), or the whole row with `returnLogits: true` (50257 numbers of JSON per
 *   item, which then dominate the request's time).
 * - Generation (`POST /v1/completions`): the same weights behind a continuous-batching engine with a
 *   KV cache, made on first use.
 * Weights: a safetensors file in PyTorch's names (nanoGPT's, `h.0.attn.c_attn.weight` [out, in]) through
 * loadParameters, or seeded initialisation.
 */
import { bytesPerElement } from '../../../core/dtype.js';
import { TandemError, formatBytes } from '../../../core/errors.js';
import { numel } from '../../../core/shape.js';
import { loadParameters } from '../../../nn/checkpoint.js';
import { Nn } from '../../../nn/context.js';
import { gptParameterCount } from '../../../nn/memory.js';
import { GptInference, KvCache } from '../../../nn/inference/index.js';
import { Gpt } from '../../../nn/models/gpt.js';
import type { Runtime } from '../../../runtime/runtime.js';
import type { ServiceRuntime } from '../../jobs/job-type.js';
import type { BatchContext, ModelFactory, ModelPlacement, ModelSpec } from '../model.js';
import { type TextCodec, loadCodec, tokensAtLeast } from '../generation/codec.js';
import { GenerationEngine } from '../generation/engine.js';
import type { GenerativeModel, Generator } from '../generation/generative.js';
import { GPT_CONFIG_SCHEMA, type GptServeConfig, parseGptConfig } from './gpt-config.js';

export const GPT_MAX_BATCH = 64;

/** One parsed scoring item. */
export interface GptScoreItem {
  readonly tokens: readonly number[];
  readonly topK: number;
  readonly returnLogits: boolean;
}

export interface GptScoreOutput {
  /** The most likely next tokens after the last one, most likely first. */
  readonly top: ReadonlyArray<{ readonly token: number; readonly logit: number }>;
  /** The whole logit row over the vocabulary (only with returnLogits). */
  readonly logits?: number[];
}

function inputSchema(context: number, vocab: number, hasText: boolean): Record<string, unknown> {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      tokens: {
        type: 'array',
        minItems: 1,
        maxItems: context,
        items: { type: 'integer', minimum: 0, maximum: vocab - 1 },
      },
      ...(hasText ? { text: { type: 'string', minLength: 1 } } : {}),
      topK: { type: 'integer', minimum: 1, maximum: 1024 },
      returnLogits: { type: 'boolean' },
    },
  };
}

const OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    top: {
      type: 'array',
      items: { type: 'object', properties: { token: { type: 'integer' }, logit: { type: 'number' } } },
    },
    logits: { type: 'array', items: { type: 'number' } },
  },
};

function invalid(message: string, details: Record<string, unknown> = {}): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', message, details);
}

/** The device kind of the placement rule that this runtime has (the engine's steps run there). */
function engineDevice(rt: ServiceRuntime, placement: ModelPlacement): string | undefined {
  const kinds = new Set(rt.devices.map((d) => d.info.kind));
  return placement.kinds.find((k) => kinds.has(k));
}

class ServedGpt implements GenerativeModel {
  readonly kind = 'gpt';
  readonly maxBatchSize = GPT_MAX_BATCH;
  readonly inputSchema: Record<string, unknown>;
  readonly outputSchema = OUTPUT_SCHEMA;
  readonly weightBytes: number;
  readonly generator: Generator;
  private engineInstance: GenerationEngine | null = null;

  constructor(
    readonly name: string,
    readonly version: number,
    private readonly cfg: GptServeConfig,
    private readonly model: Gpt,
    private readonly inf: GptInference,
    codec: TextCodec | null,
    device: string | undefined,
  ) {
    const a = cfg.arch;
    this.inputSchema = inputSchema(a.context, a.vocab, codec !== null);
    this.weightBytes = model
      .namedParameters()
      .reduce((s, [, p]) => s + numel(p.shape) * bytesPerElement(p.dtype), 0);
    const g = cfg.generation;
    this.generator = {
      codec,
      maxLength: g.maxLength,
      vocab: a.vocab,
      engine: () =>
        (this.engineInstance ??= new GenerationEngine(inf, {
          maxSequences: g.maxSequences,
          maxLength: g.maxLength,
          ...(g.maxCacheBytes === undefined ? {} : { maxCacheBytes: g.maxCacheBytes }),
          ...(g.maxWaiting === undefined ? {} : { maxWaiting: g.maxWaiting }),
          ...(g.prefillTokensPerStep === undefined ? {} : { prefillTokensPerStep: g.prefillTokensPerStep }),
          place: () => ({ device, tags: { model: this.name, version: String(this.version) } }),
        })),
    };
  }

  parse(inputs: unknown): GptScoreItem {
    if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs))
      throw invalid('inputs must be an object {tokens} or {text}');
    const o = inputs as Record<string, unknown>;
    const extra = Object.keys(o).find((k) => !['tokens', 'text', 'topK', 'returnLogits'].includes(k));
    if (extra !== undefined) throw invalid(`unknown input ${JSON.stringify(extra)}`);
    let tokens: number[];
    if (o['tokens'] !== undefined) {
      if (o['text'] !== undefined) throw invalid('give tokens or text, not both');
      if (!Array.isArray(o['tokens']))
        throw new TandemError('TANDEM_ERR_SHAPE', 'tokens must be an array of token ids');
      tokens = o['tokens'] as number[];
    } else if (typeof o['text'] === 'string') {
      const codec = this.generator.codec;
      if (codec === null) throw invalid(`model ${this.name} has no tokenizer: give tokens`);
      const atLeast = tokensAtLeast(codec, o['text']);
      if (atLeast > this.cfg.arch.context)
        throw new TandemError(
          'TANDEM_ERR_LIMIT',
          `the text is at least ${atLeast} tokens; 1 to ${this.cfg.arch.context} (the context) allowed`,
          { tokens: atLeast, limit: this.cfg.arch.context },
        );
      tokens = codec.encode(o['text']);
    } else throw invalid('inputs need tokens (an array of token ids) or text');
    const a = this.cfg.arch;
    if (tokens.length < 1 || tokens.length > a.context)
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `${tokens.length} tokens; 1 to ${a.context} (the context) allowed`,
        {
          tokens: tokens.length,
          limit: a.context,
        },
      );
    this.inf.checkTokens(tokens);
    const topK = o['topK'] ?? this.cfg.topK;
    if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > Math.min(1024, a.vocab))
      throw invalid(`topK must be an integer in [1, ${Math.min(1024, a.vocab)}]`);
    const returnLogits = o['returnLogits'] ?? false;
    if (typeof returnLogits !== 'boolean') throw invalid('returnLogits must be a boolean');
    return { tokens, topK, returnLogits };
  }

  async runBatch(
    items: readonly GptScoreItem[],
    ctx: BatchContext,
  ): Promise<Array<GptScoreOutput | TandemError>> {
    // Items that slipped past parse fail alone; the rest run as one padded batch.
    const out: Array<GptScoreOutput | TandemError> = new Array<GptScoreOutput | TandemError>(items.length);
    const ok: number[] = [];
    items.forEach((it, i) => {
      try {
        this.parse({ tokens: it.tokens, topK: it.topK, returnLogits: it.returnLogits });
        ok.push(i);
      } catch (e) {
        out[i] = e instanceof TandemError ? e : invalid(String(e));
      }
    });
    if (ok.length === 0) return out;
    const seqs = ok.map((i) => items[i]!.tokens);
    const place = { device: ctx.device, tags: ctx.tags };
    if (ok.some((i) => items[i]!.returnLogits)) {
      const rows = await this.inf.last(seqs, { kind: 'logits' }, place);
      ok.forEach((i, j) => {
        const row = rows[j]!;
        const it = items[i]!;
        const top = topOf(row, it.topK);
        out[i] = it.returnLogits ? { top, logits: Array.from(row) } : { top };
      });
      return out;
    }
    const k = Math.max(...ok.map((i) => items[i]!.topK));
    const rows = await this.inf.last(seqs, { kind: 'topk', k }, place);
    ok.forEach((i, j) => {
      const r = rows[j]!;
      const top: Array<{ token: number; logit: number }> = [];
      for (let t = 0; t < items[i]!.topK && r.indices[t]! >= 0; t++)
        top.push({ token: r.indices[t]!, logit: r.values[t]! });
      out[i] = { top };
    });
    return out;
  }

  async unload(): Promise<void> {
    await this.engineInstance?.close();
    this.engineInstance = null;
    this.inf.dispose();
    for (const p of this.model.parameters()) this.model.nn.rt.free(p.data);
  }
}

/** The k largest entries of a row (host side, for the returnLogits path that reads the row anyway). */
function topOf(row: Float32Array, k: number): Array<{ token: number; logit: number }> {
  const idx = Array.from(row.keys())
    .filter((i) => !Number.isNaN(row[i]!))
    .sort((a, b) => row[b]! - row[a]! || a - b)
    .slice(0, k);
  return idx.map((i) => ({ token: i, logit: row[i]! }));
}

/**
 * Refuses, before anything is allocated, a config whose weights and KV cache (maxSequences sequences of
 * maxLength positions, or what maxCacheMiB holds) exceed the largest device that may serve it: the dims
 * are open-ended integers (`context: 1e9` was a RangeError, one that fits a typed array but not the
 * host would take its memory), and a cache that cannot be allocated failed every completion with a 500.
 */
function requireFits(cfg: GptServeConfig, rt: ServiceRuntime, kind: string | undefined): void {
  const weights = gptParameterCount(cfg.arch) * bytesPerElement(cfg.precision);
  const g = cfg.generation;
  const perSlot = KvCache.bytes(cfg.arch, cfg.precision, { slots: 1, positions: g.maxLength });
  if (g.maxCacheBytes !== undefined && g.maxCacheBytes < perSlot)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `gpt config: generation.maxCacheMiB holds no sequence of ${g.maxLength} positions (${formatBytes(perSlot)} each)`,
    );
  const slots = Math.min(g.maxSequences, Math.floor((g.maxCacheBytes ?? Infinity) / perSlot));
  const cache = slots * perSlot;
  const devices = rt.devices.filter((d) => kind === undefined || d.info.kind === kind);
  const largest = Math.max(0, ...devices.map((d) => d.info.memoryBytes));
  const where = `the largest${kind === undefined ? '' : ` ${kind}`} device here has ${formatBytes(largest)}`;
  if (devices.length === 0) return;
  if (!(weights <= largest))
    throw new TandemError(
      'TANDEM_ERR_OUT_OF_MEMORY',
      `gpt config: the weights need ${formatBytes(weights)} in ${cfg.precision}, ${where}`,
      { weightBytes: weights, deviceBytes: largest },
    );
  if (!(weights + cache <= largest))
    throw new TandemError(
      'TANDEM_ERR_OUT_OF_MEMORY',
      `gpt config: the weights (${formatBytes(weights)}) and the KV cache of ${slots} sequences of ${g.maxLength} positions (${formatBytes(cache)}) need more than ${where}; lower generation.maxSequences or set generation.maxCacheMiB`,
      { weightBytes: weights, cacheBytes: cache, deviceBytes: largest },
    );
}

export const gptModelFactory: ModelFactory = {
  kind: 'gpt',
  description:
    'GPT-2-style language model: last-token top-k scoring through the lane, and generation with a KV cache and continuous batching through /v1/completions',
  configSchema: GPT_CONFIG_SCHEMA,
  // No WGSL for attention or the kvcache ops: a default placement with webgpu would be registered
  // ready and then fail every request on a machine whose first present kind is WebGPU (docs/generation.md).
  deviceKinds: ['cpu', 'cuda'],
  maxBatchSizeFor: () => GPT_MAX_BATCH,
  async create(spec: ModelSpec, rt: ServiceRuntime) {
    const cfg = parseGptConfig(spec.config);
    const full = rt as unknown as Runtime;
    const device = engineDevice(rt, spec.placement);
    requireFits(cfg, rt, device);
    const nn = new Nn(full, {
      precision: cfg.precision,
      seed: cfg.seed,
      ...(device === undefined ? {} : { device }),
    });
    const model = new Gpt(nn, cfg.arch);
    try {
      if (spec.weightsPath !== undefined) await loadParameters(model, spec.weightsPath);
      const codec = await loadCodec(cfg.tokenizer, cfg.arch.vocab);
      return new ServedGpt(
        spec.name,
        spec.version,
        cfg,
        model,
        new GptInference(model, rt, { plans: cfg.scoring }),
        codec,
        device,
      );
    } catch (e) {
      for (const p of model.parameters()) full.free(p.data);
      throw e;
    }
  },
};
