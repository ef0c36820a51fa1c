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
import { reshape } from '../ops/elementwise.js';
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
    let x = embedding(nn, ids, this.wte, this.wpe);
    let h: Var | null = null;
    let pending: Var | null = null; // the sublayer output not yet added to the residual stream x
    const norm = (ln: LayerNorm): Var => {
      if (pending === null) return ln.forward(x);
      const r = residualLayerNorm(nn, pending, x, ln.weight, ln.bias);
      x = r.sum;
      pending = null;
      return r.y;
    };
    for (const blk of this.blocks) {
      h = norm(blk.ln1);
      // Rows [B·T, ·] throughout: attention reads the projection's rows in place, with T given.
      const y = causalSelfAttention(nn, blk.cAttn.forward(h), c.heads, t);
      pending = blk.attnProj.forward(y);
      h = norm(blk.ln2);
      const fc = blk.cFc;
      const proj = blk.mlpProj;
      pending = mlp(nn, h, fc.weight, fc.bias!, proj.weight, proj.bias!, 'gelu');
    }
    h = norm(this.lnF);
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
