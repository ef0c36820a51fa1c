/**
 * GPT-2 (pre-LN transformer, GELU-tanh MLP, learned positions, tied input/output embeddings), with
 * the residual sum and the next LayerNorm fused into one kernel between sublayers. Parameter names
 * follow nanoGPT/Hugging Face (`h.0.attn.c_attn.weight`, weights [out, in]), so PyTorch reads and writes
 * the same checkpoints.
 */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import { constant, normal } from '../init.js';
import { LayerNorm, Linear } from '../modules/layers.js';
import { Module } from '../modules/module.js';
import { causalSelfAttention } from '../ops/attention.js';
import { add, reshape } from '../ops/elementwise.js';
import { embedding } from '../ops/embedding.js';
import { linear, mlp } from '../ops/linear.js';
import { crossEntropy } from '../ops/loss.js';
import { residualLayerNorm } from '../ops/norm.js';
import type { Var } from '../var.js';

export interface GptConfig {
  readonly layers: number;
  readonly heads: number;
  readonly width: number;
  /** Longest sequence (positions). */
  readonly context: number;
  /** Real vocabulary (50257 for GPT-2's BPE). */
  readonly vocab: number;
  /** Rows of the embedding table: the vocabulary padded for fast kernels (50304). */
  readonly paddedVocab: number;
}

export const GPT_PRESETS: Readonly<Record<string, GptConfig>> = {
  /** GPT-2 small, 124M parameters. */
  gpt2: { layers: 12, heads: 12, width: 768, context: 1024, vocab: 50257, paddedVocab: 50304 },
  /** GPT-2 medium, 350M. */
  'gpt2-medium': { layers: 24, heads: 16, width: 1024, context: 1024, vocab: 50257, paddedVocab: 50304 },
  /** A small GPT over GPT-2's tokens that trains on a CPU in minutes. */
  'gpt-mini': { layers: 4, heads: 4, width: 128, context: 128, vocab: 50257, paddedVocab: 50304 },
  /** A byte-level toy for tests. */
  'gpt-micro': { layers: 2, heads: 2, width: 32, context: 32, vocab: 256, paddedVocab: 256 },
};

/**
 * The token and position embeddings, drawn in this order from the context's seeds (a pipeline's first
 * stage makes the same two, so its initial values are the whole model's).
 */
export function gptEmbeddings(nn: Nn, c: GptConfig): { readonly wte: Var; readonly wpe: Var } {
  const wte = nn.parameter(
    [c.paddedVocab, c.width],
    normal(c.paddedVocab * c.width, 0.02, nn.takeSeed()),
    'wte.weight',
  );
  const wpe = nn.parameter(
    [c.context, c.width],
    normal(c.context * c.width, 0.02, nn.takeSeed()),
    'wpe.weight',
  );
  return { wte, wpe };
}

export function gptConfig(preset: string, overrides: Partial<GptConfig> = {}): GptConfig {
  const base = GPT_PRESETS[preset];
  if (base === undefined)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `unknown GPT preset ${JSON.stringify(preset)}; known: ${Object.keys(GPT_PRESETS).join(', ')}`,
    );
  const c = { ...base, ...overrides };
  const bad = (['layers', 'heads', 'width', 'context', 'vocab', 'paddedVocab'] as const).find(
    (k) => !Number.isInteger(c[k]) || c[k] < 1,
  );
  if (bad !== undefined)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `gpt: ${bad} must be a positive integer`);
  if (c.width % c.heads !== 0)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `gpt: width ${c.width} is not divisible by ${c.heads} heads`,
    );
  if (c.paddedVocab < c.vocab)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'gpt: paddedVocab must be at least vocab');
  return c;
}

/** llm.c's FLOP count per token for training (forward + backward): 6N + 6·L·C·T. */
export function gptFlopsPerToken(c: GptConfig, params: number, t = c.context): number {
  return 6 * params + 6 * c.layers * c.width * t;
}

/** One transformer block (exported for pipeline stages, which hold a range of them). */
export class Block extends Module {
  readonly ln1: LayerNorm;
  readonly cAttn: Linear;
  readonly attnProj: Linear;
  readonly ln2: LayerNorm;
  readonly cFc: Linear;
  readonly mlpProj: Linear;

  constructor(nn: Nn, c: GptConfig) {
    super();
    const w = c.width;
    const std = 0.02;
    const projStd = 0.02 / Math.sqrt(2 * c.layers);
    const lin = (i: number, o: number, s: number, act?: 'gelu'): Linear =>
      new Linear(nn, i, o, {
        weight: normal(i * o, s, nn.takeSeed()),
        biasInit: constant(o, 0),
        ...(act ? { act } : {}),
      });
    this.ln1 = this.child('ln_1', new LayerNorm(nn, w));
    const attn = new Container();
    this.child('attn', attn);
    this.cAttn = attn.add('c_attn', lin(w, 3 * w, std));
    this.attnProj = attn.add('c_proj', lin(w, w, projStd));
    this.ln2 = this.child('ln_2', new LayerNorm(nn, w));
    const mlp = new Container();
    this.child('mlp', mlp);
    this.cFc = mlp.add('c_fc', lin(w, 4 * w, std, 'gelu'));
    this.mlpProj = mlp.add('c_proj', lin(4 * w, w, projStd));
  }
}

/**
 * The residual stream between sublayers, holding back the last sublayer's output so that adding it
 * and the next LayerNorm run as one kernel (residualLayerNorm) instead of two.
 */
export class ResidualStream {
  private pending: Var | null = null; // the sublayer output not yet added to x

  constructor(
    private readonly nn: Nn,
    private x: Var,
  ) {}

  /** LayerNorm of the stream, adding any held-back sublayer output in the same kernel. */
  norm(ln: LayerNorm): Var {
    if (this.pending === null) return ln.forward(this.x);
    const r = residualLayerNorm(this.nn, this.pending, this.x, ln.weight, ln.bias);
    this.x = r.sum;
    this.pending = null;
    return r.y;
  }

  /** Holds back a sublayer's output until the next norm (or sum). */
  defer(out: Var): void {
    this.pending = out;
  }

  /** The stream with everything added (for a pipeline stage that hands it on). */
  sum(): Var {
    return this.pending === null ? this.x : add(this.nn, this.pending, this.x);
  }
}

/**
 * Runs `blocks` (a contiguous range of the model's) over the residual stream `x` [B·T, C]: the whole
 * model and each pipeline stage go through this one op sequence, so a stage split computes the same.
 */
export function runBlocks(nn: Nn, c: GptConfig, blocks: readonly Block[], x: Var, t: number): ResidualStream {
  const stream = new ResidualStream(nn, x);
  for (const blk of blocks) {
    const h = stream.norm(blk.ln1);
    // Rows [B·T, ·] throughout: attention reads the projection's rows in place, with T given.
    const y = causalSelfAttention(nn, blk.cAttn.forward(h), c.heads, t);
    stream.defer(blk.attnProj.forward(y));
    const h2 = stream.norm(blk.ln2);
    const fc = blk.cFc;
    const proj = blk.mlpProj;
    stream.defer(mlp(nn, h2, fc.weight, fc.bias!, proj.weight, proj.bias!, 'gelu'));
  }
  return stream;
}

/** A plain container module (a dotted-name level: "attn", "mlp"). */
class Container extends Module {
  add<M extends Module>(name: string, m: M): M {
    return this.child(name, m);
  }
}

export class Gpt extends Module {
  readonly wte: Var;
  readonly wpe: Var;
  readonly blocks: Block[] = [];
  readonly lnF: LayerNorm;

  constructor(
    readonly nn: Nn,
    readonly config: GptConfig,
  ) {
    super();
    const c = config;
    const e = gptEmbeddings(nn, c);
    this.wte = this.param('wte.weight', e.wte);
    this.wpe = this.param('wpe.weight', e.wpe);
    const h = new Container();
    this.child('h', h);
    for (let i = 0; i < c.layers; i++) this.blocks.push(h.add(String(i), new Block(nn, c)));
    this.lnF = this.child('ln_f', new LayerNorm(nn, c.width));
  }

  /** Logits [B·T, paddedVocab] for token ids [B, T] (i32). */
  logits(ids: Var): Var {
    const nn = this.nn;
    const c = this.config;
    if (ids.shape.length !== 2) throw new TandemError('TANDEM_ERR_SHAPE', 'gpt: ids must be [batch, time]');
    const t = ids.shape[1]!;
    if (t > c.context)
      throw new TandemError('TANDEM_ERR_SHAPE', `gpt: ${t} tokens exceed the context of ${c.context}`);
    const stream = runBlocks(nn, c, this.blocks, embedding(nn, ids, this.wte, this.wpe), t);
    const h = stream.norm(this.lnF);
    return linear(nn, h, this.wte, null);
  }

  /** Mean next-token cross-entropy; targets i32 [B, T] (or [B·T]). */
  loss(ids: Var, targets: Var): Var {
    const logits = this.logits(ids);
    const flat = targets.shape.length === 1 ? targets : reshapeTargets(this.nn, targets);
    return crossEntropy(this.nn, logits, flat, this.config.vocab);
  }
}

function reshapeTargets(nn: Nn, targets: Var): Var {
  return nn.noGrad(() => reshape(nn, targets, [targets.data.size]));
}
