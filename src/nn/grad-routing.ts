/**
 * Where gradient contributions go during a backward pass (the ops' backward closures call these): the
 * first contribution to a Var's gradient since the last zeroGrad overwrites, later ones add; a
 * gradient an intermediate alone will read is handed over by reference instead of copied.
 */
import type { DType } from '../core/dtype.js';
import type { Scalars } from '../devices/device.js';
import type { Tensor } from '../memory/tensor.js';
import type { TaskHandle } from '../runtime/task.js';
import type { Var } from './var.js';

/** What the routing needs of the autograd context (Nn). */
export interface GradHost {
  tensor(shape: readonly number[], dtype: DType): Tensor;
  free(t: Tensor): void;
  submit(kernel: string, args: Readonly<Record<string, Tensor>>, scalars?: Scalars): TaskHandle | null;
  /** Gradients handed to a Var by reference in this backward (not freed with their op's output). */
  readonly handedOver: Set<Tensor>;
}

/** Where a gradient contribution goes: the tensor, and whether to add to what it holds. */
export interface GradTarget {
  readonly tensor: Tensor;
  readonly accumulate: boolean;
}

/**
 * Where a contribution to `v`'s gradient goes: null when `v` needs none. The first contribution
 * since the last zeroGrad overwrites, later ones add.
 */
export function gradTarget(nn: GradHost, v: Var): GradTarget | null {
  if (!v.requiresGrad) return null;
  if (v.grad === null) v.grad = nn.tensor(v.shape, v.dtype);
  const accumulate = v.gradWritten;
  v.gradWritten = true;
  return { tensor: v.grad, accumulate };
}

/**
 * Gradient outputs of a kernel that has one `accumulate` flag for several of them (dw and db of
 * linear_dw, dx/dw/db of layernorm_backward). `slots` pairs each gradient with the Var it belongs
 * to (null: the kernel needs the output but nothing wants it) and its shape and dtype. Call
 * `finish()` after submitting the kernel: it frees scratch outputs and adds redirected ones in.
 */
export function jointTargets(
  nn: GradHost,
  slots: readonly { v: Var | null; shape: readonly number[]; dtype: DType }[],
): {
  tensors: Tensor[];
  accumulate: boolean;
  finish: () => void;
} {
  const wanted = slots.filter((s) => s.v !== null && s.v.requiresGrad).map((s) => s.v!);
  const agree = wanted.every((v) => v.gradWritten === wanted[0]?.gradWritten);
  const scratch: Tensor[] = [];
  const redirect: [Var, Tensor][] = [];
  let accumulate = false;
  const tensors = slots.map(({ v, shape, dtype }) => {
    if (v !== null && v.requiresGrad && agree) {
      const t = gradTarget(nn, v)!;
      accumulate = t.accumulate;
      return t.tensor;
    }
    const t = nn.tensor(shape, dtype);
    if (v !== null && v.requiresGrad) redirect.push([v, t]);
    else scratch.push(t);
    return t;
  });
  return {
    tensors,
    accumulate,
    finish: () => {
      for (const [v, t] of redirect) if (!adoptGrad(nn, v, t)) nn.free(t);
      for (const t of scratch) nn.free(t);
    },
  };
}

/**
 * Makes `grad` itself `v`'s gradient when nothing else will add into it (an intermediate used
 * once, with no gradient yet); otherwise copies or adds it in. True when `grad` was handed over (the
 * caller must then not free it).
 */
export function adoptGrad(nn: GradHost, v: Var, grad: Tensor): boolean {
  if (!v.requiresGrad) return false;
  if (v.kind === 'intermediate' && v.uses === 1 && (v.grad === null || !v.gradWritten)) {
    if (v.grad !== null && v.grad !== grad) nn.free(v.grad);
    v.grad = grad;
    v.gradWritten = true;
    nn.handedOver.add(grad);
    return true;
  }
  const target = gradTarget(nn, v)!;
  if (target.accumulate) nn.submit('axpy', { x: grad, y: target.tensor }, { alpha: 1 });
  else nn.submit('copy', { x: grad, y: target.tensor });
  return false;
}

/**
 * For a kernel that overwrites its gradient output (no accumulate flag): where to write, and a
 * `finish()` that adds a scratch result into `v`'s gradient when it already held one (or frees it
 * when `v` needs none).
 */
export function overwriteTarget(nn: GradHost, v: Var): { tensor: Tensor; finish: () => void } {
  if (v.requiresGrad && !v.gradWritten) return { tensor: gradTarget(nn, v)!.tensor, finish: () => undefined };
  const t = nn.tensor(v.shape, v.dtype);
  return {
    tensor: t,
    finish: () => {
      if (!(v.requiresGrad && adoptGrad(nn, v, t))) nn.free(t);
    },
  };
}

/** Gives `grad` unchanged to every one of `vars` (a sum's inputs): one may take it by reference. */
export function shareGrad(nn: GradHost, grad: Tensor, vars: readonly Var[]): void {
  let taken = false;
  for (const v of vars) {
    if (!taken) {
      taken = adoptGrad(nn, v, grad);
      continue;
    }
    const t = gradTarget(nn, v);
    if (t === null) continue;
    if (t.accumulate) nn.submit('axpy', { x: grad, y: t.tensor }, { alpha: 1 });
    else nn.submit('copy', { x: grad, y: t.tensor });
  }
}
