/**
 * Kept forward passes for repeated scoring shapes (batch × length × head × device): the tensors of one
 * pass (inputs, the blocks' working buffers, outputs) and its kernels as a prepared runtime sequence.
 * A request of a known shape writes its token ids and row indices into the plan's input tensors and
 * runs the sequence again — one task, no kernel revalidated, no tensor made, the same device addresses
 * each time (what lets a GPU backend replay the launches). Small shapes gain latency: the host's
 * per-kernel cost is what such a request waits for. Large ones (up to B.7's batch of 64 × 128 tokens)
 * gain throughput: under the lane the host builds the next batch while the GPU runs this one, and a
 * replayed plan takes it ~0.1 ms instead of a pass's worth of kernel launches. A few are kept, bounded
 * in bytes, the least recently used dropped first.
 *
 * Shapes are bucketed: a batch's size and padded length are rounded up to planned sizes (`bucketUp`, at
 * most a fifth of the rows padding), so the irregular batches a lane forms under load (any size from 1
 * to 64) reuse a few plans instead of each new size building (and evicting) one. A shape whose plan is
 * running may get a second copy, so two batches of one shape (a lane with two instances) need not wait
 * for each other.
 */
import type { HostArray } from '../../core/dtype.js';
import type { Tensor } from '../../memory/tensor.js';
import type { PreparedSequence } from '../../runtime/sequence.js';
import type { InferenceRuntime, RunPlace } from './scope.js';

export interface ScorePlan {
  /** The tensors a run writes first: token ids and row indices (scoring); ids, positions, slots (decode). */
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
  readonly prepared: PreparedSequence;
  /** Everything the plan made (freed when it is dropped). */
  readonly tensors: readonly Tensor[];
}

/** How many plans a model keeps, and for which shapes. */
export interface ScorePlanLimits {
  /** Rows (batch × padded length) up to which a shape gets a plan; 0: no plans. */
  readonly maxRows: number;
  /** Bytes the plans of one model may hold together (the newest plan is always kept). */
  readonly maxBytes: number;
  /** Plans kept at most. */
  readonly maxPlans: number;
  /** Round batch and length up to planned sizes (`bucketUp`); false: one plan per exact shape. */
  readonly bucketed: boolean;
  /** Plans of one shape at most (a copy is made only while the others are running). */
  readonly copies: number;
}

/**
 * GPT-2 124M in bf16 needs ~26 KB of working buffers a row, so a 64 × 128 batch's plan is ~215 MB and
 * the bucketed shapes a lane meets from 24 to 64 rows of 128 tokens fit in 1 GiB together.
 */
export const DEFAULT_PLAN_LIMITS: ScorePlanLimits = {
  maxRows: 8192,
  maxBytes: 2 ** 30,
  maxPlans: 32,
  bucketed: true,
  copies: 2,
};

/**
 * The planned size for `n` ≥ 1: n itself up to 4, then the next multiple of a quarter of the power of
 * two above: 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, … — at most 20 % padding
 * (n = 33 → 40), 4 sizes per octave.
 */
export function bucketUp(n: number): number {
  if (n <= 4) return n;
  let pow = 8;
  while (pow < n) pow *= 2;
  const step = pow / 8;
  return Math.ceil(n / step) * step;
}

/**
 * The shape a scoring pass of b sequences padded to t tokens runs at: bucketed (lengths capped at
 * `context`) when that fits `maxRows`, else exact, else null (no plan: the pass is built and freed).
 */
export function planShape(
  b: number,
  t: number,
  context: number,
  limits: ScorePlanLimits,
): { b: number; t: number } | null {
  if (limits.bucketed) {
    const shape = { b: bucketUp(b), t: Math.min(bucketUp(t), context) };
    if (shape.b * shape.t <= limits.maxRows) return shape;
  }
  return b * t <= limits.maxRows ? { b, t } : null;
}

export class ScorePlans {
  private readonly plans = new Map<string, ScorePlan>();
  /** Runs in flight per plan key (a plan with runs is not handed out again while a copy may be made). */
  private readonly running = new Map<string, number>();
  private bytes = 0;

  constructor(
    private readonly free: (t: Tensor) => void,
    readonly limits: ScorePlanLimits = DEFAULT_PLAN_LIMITS,
  ) {}

  get size(): number {
    return this.plans.size;
  }

  /** Bytes the kept plans' tensors hold. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** The plan for `key`, now the most recently used. */
  get(key: string): ScorePlan | undefined {
    const p = this.plans.get(key);
    if (p !== undefined) {
      this.plans.delete(key);
      this.plans.set(key, p);
    }
    return p;
  }

  /**
   * The plan to run `shape` on: the first copy not running now, or the key of a new copy to make (plan
   * undefined) while fewer than `copies` exist, or else the first copy (its runs then queue in order).
   */
  pick(shape: string): { key: string; plan: ScorePlan | undefined } {
    const copies = Math.max(1, this.limits.copies);
    for (let c = 0; c < copies; c++) {
      const key = `${shape}#${c}`;
      const plan = this.get(key);
      if (plan === undefined || (this.running.get(key) ?? 0) === 0) return { key, plan };
    }
    const key = `${shape}#0`;
    return { key, plan: this.get(key) };
  }

  /** Marks a run of `key` started; the returned function marks it finished. */
  begin(key: string): () => void {
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    return () => {
      const n = (this.running.get(key) ?? 1) - 1;
      if (n > 0) this.running.set(key, n);
      else this.running.delete(key);
    };
  }

  add(key: string, plan: ScorePlan): void {
    this.drop(key);
    this.plans.set(key, plan);
    this.bytes += planBytes(plan);
    const { maxPlans, maxBytes } = this.limits;
    for (const old of this.plans.keys()) {
      if (old === key || (this.plans.size <= maxPlans && this.bytes <= maxBytes)) break;
      this.drop(old);
    }
  }

  /** Forgets a plan and frees its tensors (the runtime waits for the tasks already on them). */
  drop(key: string): void {
    const p = this.plans.get(key);
    if (p === undefined) return;
    this.plans.delete(key);
    this.bytes -= planBytes(p);
    for (const t of p.tensors) if (!t.freed) this.free(t);
  }

  /** Drops every plan whose key `matches` (e.g. the plans over a KV cache that is going away). */
  dropWhere(matches: (key: string) => boolean): void {
    for (const key of [...this.plans.keys()]) if (matches(key)) this.drop(key);
  }

  dispose(): void {
    this.dropWhere(() => true);
  }
}

function planBytes(p: ScorePlan): number {
  let n = 0;
  for (const t of p.tensors) n += t.bytes;
  return n;
}

/**
 * One pass through the kept plan for `shape` in `plans`: made by `build(key)` on first use (its input
 * tensors then already hold `inputs`), else `inputs` written into the plan's input tensors; its prepared
 * sequence run and its outputs read. A failed run drops the plan (its tensors are left failed, as any
 * task's outputs are).
 */
export async function runKeptPlan(
  rt: InferenceRuntime,
  plans: ScorePlans,
  shape: string,
  place: RunPlace,
  inputs: readonly Int32Array[],
  build: (key: string) => ScorePlan,
): Promise<HostArray[]> {
  const picked = plans.pick(shape);
  const key = picked.key;
  let plan = picked.plan;
  const writes: Promise<void>[] = [];
  if (plan === undefined) {
    plan = build(key);
    plans.add(key, plan);
  } else for (const [i, t] of plan.inputs.entries()) writes.push(rt.write(t, inputs[i]!));
  const end = plans.begin(key);
  try {
    // Submitted in one turn, in this order: the runtime orders runs of one plan by its tensors.
    const run = rt.submitPrepared(plan.prepared, place.tags);
    const reads = plan.outputs.map((o) => rt.read(o));
    const done = await Promise.all([...writes, run.done, ...reads]);
    return done.slice(writes.length + 1) as HostArray[];
  } catch (e) {
    plans.drop(key);
    throw e;
  } finally {
    end();
  }
}
