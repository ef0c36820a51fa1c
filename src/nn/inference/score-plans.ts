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
 */
import type { Tensor } from '../../memory/tensor.js';
import type { PreparedSequence } from '../../runtime/sequence.js';

export interface ScorePlan {
  readonly ids: Tensor;
  readonly index: Tensor;
  readonly outputs: readonly Tensor[];
  readonly prepared: PreparedSequence;
  /** Everything the plan made (freed when it is dropped). */
  readonly tensors: readonly Tensor[];
}

/**
 * Rows (batch × length) up to which a scoring shape gets a plan (GPT-2 124M at 8192 rows: ~215 MB of
 * working buffers); `TANDEM_SCORE_PLAN_ROWS` overrides it (0: no plans), for benchmarks that compare.
 */
export const PLAN_MAX_ROWS = planRowsFromEnv(process.env['TANDEM_SCORE_PLAN_ROWS'], 8192);
/** Plans kept per model, and the bytes their tensors may hold together (the newest is always kept). */
export const MAX_PLANS = 16;
export const MAX_PLAN_BYTES = 512 * 2 ** 20;

function planRowsFromEnv(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 ? n : fallback;
}

export class ScorePlans {
  private readonly plans = new Map<string, ScorePlan>();
  private bytes = 0;

  constructor(private readonly free: (t: Tensor) => void) {}

  get size(): number {
    return this.plans.size;
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

  add(key: string, plan: ScorePlan): void {
    this.drop(key);
    this.plans.set(key, plan);
    this.bytes += planBytes(plan);
    for (const old of this.plans.keys()) {
      if (old === key || (this.plans.size <= MAX_PLANS && this.bytes <= MAX_PLAN_BYTES)) break;
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

  dispose(): void {
    for (const key of [...this.plans.keys()]) this.drop(key);
  }
}

function planBytes(p: ScorePlan): number {
  let n = 0;
  for (const t of p.tensors) n += t.bytes;
  return n;
}
