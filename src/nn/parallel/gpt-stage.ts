/**
 * One pipeline stage of GPT-2: a range of its blocks, plus the embeddings on the first stage and the
 * final LayerNorm, head and loss on the last. Parameters keep the whole model's names and initial values
 * (the same seeds in the same order as `Gpt`), so a stage split trains the same model as one device.
 *
 * Tied embeddings: the head's weight is `wte`. When the first and last stages differ, the last stage
 * holds an untied copy (`lm_head.weight`) that gets its own gradient; the pipeline adds that gradient
 * into `wte`'s on the first stage, updates `wte` once, and copies it back into the head: both copies stay
 * equal, and the update is the tied model's (Megatron keeps the two in sync the same way, by an
 * all-reduce of their gradients).
 */
import { TandemError } from '../../core/errors.js';
import type { Nn } from '../context.js';
import { Block, gptEmbeddings, runBlocks, type GptConfig } from '../models/gpt.js';
import { LayerNorm } from '../modules/layers.js';
import { Module } from '../modules/module.js';
import { reshape } from '../ops/elementwise.js';
import { embedding } from '../ops/embedding.js';
import { linear } from '../ops/linear.js';
import { crossEntropy } from '../ops/loss.js';
import { Var } from '../var.js';

/** Seeds `Gpt` takes before block i: wte, wpe, then four linear layers per block. */
const seedsBefore = (block: number): number => 2 + 4 * block;

class Blocks extends Module {
  add(name: string, b: Block): Block {
    return this.child(name, b);
  }
}

/** Layers per stage: as even as possible, the earlier stages taking the remainder. */
export function evenSplit(layers: number, stages: number): number[] {
  if (!Number.isInteger(stages) || stages < 1)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `pipeline: stages must be a positive integer, got ${stages}`,
    );
  if (stages > layers)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `pipeline: ${stages} stages for a model of ${layers} layers; each stage needs at least one layer`,
      { stages, layers },
    );
  const base = Math.floor(layers / stages);
  return Array.from({ length: stages }, (_, s) => base + (s < layers % stages ? 1 : 0));
}

/**
 * Layers per stage so that the stages' forward FLOPs are as equal as possible, counting the last
 * stage's head (2·C·Vp per token: about 4 GPT-2-medium layers) — an even split leaves that stage the
 * slowest, and the pipeline runs at its pace. Per layer and token: 24·C² (the linear layers) + 2·T·C
 * (causal attention). Exact over every contiguous split (a small dynamic programme).
 */
export function balancedSplit(c: GptConfig, stages: number, seqLen = c.context): number[] {
  evenSplit(c.layers, stages); // the same checks
  const layer = 24 * c.width * c.width + 2 * seqLen * c.width;
  const head = 2 * c.width * c.paddedVocab;
  const L = c.layers;
  // best[s][l]: the smallest possible maximum stage cost putting the first l layers on s stages.
  const best = Array.from({ length: stages + 1 }, () => new Array<number>(L + 1).fill(Infinity));
  const cut = Array.from({ length: stages + 1 }, () => new Array<number>(L + 1).fill(0));
  best[0]![0] = 0;
  for (let s = 1; s <= stages; s++)
    for (let l = s; l <= L - (stages - s); l++)
      for (let k = s - 1; k < l; k++) {
        const cost = (l - k) * layer + (s === stages ? head : 0);
        const worst = Math.max(best[s - 1]![k]!, cost);
        if (worst < best[s]![l]!) {
          best[s]![l] = worst;
          cut[s]![l] = k;
        }
      }
  const split: number[] = [];
  for (let s = stages, l = L; s > 0; s--) {
    const k = cut[s]![l]!;
    split.unshift(l - k);
    l = k;
  }
  return split;
}

export class GptStage extends Module {
  readonly first: boolean;
  readonly last: boolean;
  readonly wte: Var | null = null;
  readonly wpe: Var | null = null;
  readonly blocks: Block[] = [];
  readonly lnF: LayerNorm | null = null;
  /** The head's weight: `wte` itself on a single stage, else the last stage's untied copy. */
  readonly head: Var | null = null;

  /** Blocks [firstBlock, firstBlock + count) of the model, on `nn`'s device. */
  constructor(
    readonly nn: Nn,
    readonly config: GptConfig,
    readonly index: number,
    readonly stages: number,
    readonly firstBlock: number,
    count: number,
  ) {
    super();
    const c = config;
    this.first = index === 0;
    this.last = index === stages - 1;
    if (this.first) {
      const e = gptEmbeddings(nn, c);
      this.wte = this.param('wte.weight', e.wte);
      this.wpe = this.param('wpe.weight', e.wpe);
    } else for (let i = 0; i < seedsBefore(firstBlock); i++) nn.takeSeed();
    const h = new Blocks();
    this.child('h', h);
    for (let i = firstBlock; i < firstBlock + count; i++)
      this.blocks.push(h.add(String(i), new Block(nn, c)));
    if (this.last) {
      this.lnF = this.child('ln_f', new LayerNorm(nn, c.width));
      // A leaf with a gradient but not a trained parameter (not in nn.parameters): the pipeline
      // copies wte into it before the first step and after every update.
      this.head = this.first
        ? this.wte
        : new Var(nn, nn.tensor([c.paddedVocab, c.width]), 'parameter', true, 'lm_head.weight');
    }
  }

  /**
   * The parameters this stage's optimizer updates, with the whole model's names (the head's copy is
   * not one of them: it follows wte).
   */
  trainedParameters(): [string, Var][] {
    return this.namedParameters();
  }

  /**
   * The stage's forward pass. `input` is the token ids [B, T] (i32) on the first stage, else the
   * previous stage's output [B·T, C]. Returns the residual stream [B·T, C] for the next stage, or, on
   * the last stage, the mean cross-entropy against `targets` (i32 [B·T]).
   */
  forward(input: Var, t: number, targets?: Var): Var {
    const nn = this.nn;
    const c = this.config;
    const x = this.first ? embedding(nn, input, this.wte!, this.wpe!) : input;
    const stream = runBlocks(nn, c, this.blocks, x, t);
    if (!this.last) return stream.sum();
    if (targets === undefined)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'pipeline: the last stage needs the targets');
    const logits = linear(nn, stream.norm(this.lnF!), this.head!, null);
    const flat =
      targets.shape.length === 1 ? targets : nn.noGrad(() => reshape(nn, targets, [targets.data.size]));
    return crossEntropy(nn, logits, flat, c.vocab);
  }
}
