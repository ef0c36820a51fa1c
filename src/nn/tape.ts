/**
 * The tape and its replay: what each recorded op leaves for the backward pass, the checks that a pass
 * can start from a given root, and the reverse walk that submits the ops' gradient kernels, reports a
 * parameter once its gradient is final and frees what the pass no longer needs. Functions over a small
 * TapeHost interface (as grad-routing.ts): the Nn context keeps the tapes and the state around a pass,
 * these the order of the pass itself.
 */
import { TandemError } from '../core/errors.js';
import type { Tensor } from '../memory/tensor.js';
import { gradTarget, type GradHost } from './grad-routing.js';
import type { Var } from './var.js';

export interface TapeNode {
  readonly output: Var;
  /** Sends `grad` (the gradient at `output`) to the inputs by submitting kernels. */
  readonly backward: (grad: Tensor) => void;
  /** Tensors kept for the backward pass only (freed after it). */
  readonly saved: readonly Tensor[];
  /** The parameters among the op's inputs (to tell when a parameter's gradient is final). */
  readonly params: readonly Var[];
}

/**
 * The recorded ops of one forward pass made with `Nn.record` (a pipeline stage's micro-batch): its
 * own tape and intermediates, so several forward passes can be in flight on one context and each be
 * backpropagated later with `Nn.backwardSegment`. Opaque outside the context.
 */
export interface TapeSegment {
  readonly tape: readonly TapeNode[];
  readonly made: readonly Var[];
}

/** What a replay needs of the autograd context (Nn). */
export interface TapeHost extends GradHost {
  /** The factor a loss root's gradient is seeded with, unless `lossScaleTensor` is set. */
  readonly lossScale: number;
  readonly lossScaleTensor: Tensor | null;
  readonly onGradReady: ((p: Var) => void) | null;
  flush(): void;
}

/**
 * Replays `tape` in reverse from `root` (seeded with `seedGrad`, or with the loss scale when null),
 * then frees the saved tensors, gradients and intermediates in `made` (a loss root stays readable).
 */
export function replayTape(
  host: TapeHost,
  tape: readonly TapeNode[],
  made: readonly Var[],
  root: Var,
  seedGrad: Tensor | null,
): void {
  if (seedGrad === null) {
    const seed = gradTarget(host, root)!;
    if (host.lossScaleTensor === null) host.submit('fill', { y: seed.tensor }, { value: host.lossScale });
    else host.submit('cast', { x: host.lossScaleTensor, y: seed.tensor });
  } else {
    if (root.grad !== null && root.grad !== seedGrad) host.free(root.grad);
    root.grad = seedGrad;
    root.gradWritten = true;
  }
  const freed = new Set<Tensor>();
  const ready = host.onGradReady;
  const usesLeft = new Map<Var, number>();
  if (ready !== null)
    for (const n of tape) for (const p of n.params) usesLeft.set(p, (usesLeft.get(p) ?? 0) + 1);
  for (let i = tape.length - 1; i >= 0; i--) {
    const node = tape[i]!;
    const out = node.output;
    if (out.grad !== null && out.gradWritten) node.backward(out.grad);
    if (ready !== null)
      for (const p of node.params) {
        const left = usesLeft.get(p)! - 1;
        usesLeft.set(p, left);
        if (left === 0) {
          host.flush(); // the gradient's kernels must be submitted before anyone reads it
          ready(p);
        }
      }
    for (const t of node.saved) freeOnce(host, t, freed);
    if (out.grad !== null && !host.handedOver.delete(out.grad)) freeOnce(host, out.grad, freed);
    out.grad = null;
    out.gradWritten = false;
  }
  // A loss stays readable (loss.item() after backward) until the next step releases it; a
  // pipeline stage's output (seeded with a gradient) is freed with the rest.
  releaseMade(host, seedGrad === null ? made.filter((v) => v !== root) : made, freed);
}

/** Refuses a backward pass from `root` that could not run: not a one-element loss, or not on `tape`. */
export function checkLossRoot(tape: readonly TapeNode[], root: Var): void {
  if (root.data.size !== 1)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `backward: the loss must have one element, it has ${root.data.size} (reduce it first, e.g. with mean)`,
    );
  if (!tape.some((n) => n.output === root))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'backward: this value is not on the current tape (its step was already released or backpropagated)',
    );
}

/**
 * Refuses a backward pass of `segment` from `output` that could not run: an output not on its tape
 * (already backpropagated?), a gradient unlike the output, or no gradient for more than a loss.
 */
export function checkSegmentSeed(segment: TapeSegment, output: Var, grad: Tensor | undefined): void {
  if (!segment.tape.some((n) => n.output === output))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      "backwardSegment: the output is not on this segment's tape (already backpropagated?)",
    );
  if (grad !== undefined && (grad.size !== output.data.size || grad.dtype !== output.dtype))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `backwardSegment: the gradient has ${grad.size} ${grad.dtype} elements, the output ${output.data.size} ${output.dtype}`,
    );
  if (grad === undefined && output.data.size !== 1)
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      'backwardSegment: without a gradient the output must be a one-element loss',
    );
}

/** Frees each intermediate's value and gradient (once: `freed` tells what already was). */
function releaseMade(host: Pick<GradHost, 'free'>, made: readonly Var[], freed: Set<Tensor>): void {
  for (const v of made) {
    freeOnce(host, v.data, freed);
    if (v.grad !== null) freeOnce(host, v.grad, freed);
    v.grad = null;
  }
}

/** Frees `t` unless this pass already freed it (a tensor can be saved by several ops) or it is freed. */
export function freeOnce(host: Pick<GradHost, 'free'>, t: Tensor, freed: Set<Tensor>): void {
  if (freed.has(t) || t.freed) return;
  freed.add(t);
  host.free(t);
}
