/**
 * Data parallelism in one process: a replica (its own Nn, model and optimizer: a Trainer) per rank, all
 * built from the same seed and checked identical before the first step. Each step the global batch is
 * cut into equal row shards, one per replica; as a replica's backward pass finishes the gradients of a
 * bucket (~25 MB of parameters, in reverse creation order, as PyTorch DDP buckets them), and every
 * replica has, the bucket's reduction is submitted — an all-reduce (mean) here, a reduce-scatter in
 * ZeRO-1 (zero1.ts) — so it overlaps with the backward of the earlier layers. Averaging the shard means
 * gives the whole batch's mean gradient, so the global-norm clipping and the update match one replica
 * trained on the whole batch.
 */
import { TandemError } from '../../core/errors.js';
import type { Communicator } from '../../runtime/collectives.js';
import type { Runtime } from '../../runtime/runtime.js';
import { shardBatch, Trainer, type StepReport, type TrainData, type TrainSpec } from '../train.js';
import type { Var } from '../var.js';

/** PyTorch DDP's default bucket size. */
export const BUCKET_BYTES = 25 * 2 ** 20;
export const DATA_PARALLEL_MODES = ['data', 'zero1'] as const;
export type DataParallelMode = (typeof DATA_PARALLEL_MODES)[number];

export interface Bucket {
  /** Parameter indices, in the order the backward pass finishes them (reverse creation order). */
  readonly params: readonly number[];
  readonly elements: number;
}

/** Consecutive parameters from the last to the first, cut once a bucket reaches `bucketBytes`. */
export function planBuckets(params: readonly Var[], bucketBytes: number): Bucket[] {
  const out: Bucket[] = [];
  let current: number[] = [];
  let bytes = 0;
  let elements = 0;
  for (let i = params.length - 1; i >= 0; i--) {
    current.push(i);
    bytes += params[i]!.data.bytes;
    elements += params[i]!.data.size;
    if (bytes >= bucketBytes) {
      out.push({ params: current, elements });
      current = [];
      bytes = 0;
      elements = 0;
    }
  }
  if (current.length > 0) out.push({ params: current, elements });
  return out;
}

/** The device of a rank ("cuda0#1" → "cuda0"). */
export function rankDevice(rank: string): string {
  return rank.split('#')[0]!;
}

/** What happens to a bucket's gradients once final on every rank, and the update after the backward. */
export interface GradReduction {
  reduceBucket(b: number): void;
  update(lr: number): Promise<void>;
  dispose(): void;
}

export interface ReplicaOptions {
  readonly bucketBytes?: number;
  /** Collective engine (default auto: NCCL where every rank is its own GPU). */
  readonly engine?: 'auto' | 'nccl' | 'portable';
}

/** Refuses what cannot be run before anything is built. */
export function checkParallel(spec: TrainSpec, ranks: readonly string[], mode: string): void {
  if (!(DATA_PARALLEL_MODES as readonly string[]).includes(mode))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `train: unknown parallel mode ${JSON.stringify(mode)}; expected ${DATA_PARALLEL_MODES.join(' or ')}`,
    );
  if (!Array.isArray(ranks) || ranks.length === 0 || ranks.some((r) => typeof r !== 'string'))
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'train: give at least one device to train on');
  // Replicas run step by step (buckets all-reduced during the backward): an explicit recorded step is
  // refused as planParallel refuses it, rather than quietly trained without one.
  // (Replicas force it off for every rank, so one rank would ignore it just the same.)
  if (spec.staticStep === true)
    throw new TandemError(
      'TANDEM_ERR_UNSUPPORTED',
      `train: replicas run step by step, without a recorded step (staticStep); train one device with the Trainer for one`,
      { devices: ranks.length },
    );
  if (new Set(ranks).size !== ranks.length)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `train: a device is listed twice (${ranks.join(', ')}); two replicas on one device are id#0, id#1`,
    );
  if (!Number.isInteger(spec.batch) || spec.batch % ranks.length !== 0)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `train: the batch (${spec.batch}) must divide evenly over ${ranks.length} devices`,
      { batch: spec.batch, devices: ranks.length },
    );
}

export class Replicas {
  readonly trainers: Trainer[];
  /** params[rank][i]: the i-th parameter of each replica (same construction order everywhere). */
  readonly params: Var[][];
  readonly buckets: Bucket[];
  reduction: GradReduction | null = null;
  private readonly bucketOf: number[] = [];
  private readonly readyCount: number[];
  private readonly reduced: boolean[];

  constructor(
    rt: Runtime,
    readonly spec: TrainSpec,
    data: TrainData,
    readonly ranks: readonly string[],
    readonly comm: Communicator,
    options: ReplicaOptions = {},
  ) {
    const n = ranks.length;
    // Rank 0's data source hands out the global batch; every replica takes its rows of it.
    this.trainers = ranks.map(
      (r, i) =>
        new Trainer(
          rt,
          // Replicas are driven step by step (buckets all-reduced during the backward): no recorded step.
          { ...spec, batch: spec.batch / n, device: rankDevice(r), staticStep: false },
          data,
          i === 0 ? { dataRows: spec.batch } : {},
        ),
    );
    this.params = this.trainers.map((t) => [...t.built.model.parameters()]);
    this.buckets = planBuckets(this.params[0]!, options.bucketBytes ?? BUCKET_BYTES);
    this.buckets.forEach((b, k) => b.params.forEach((i) => (this.bucketOf[i] = k)));
    this.readyCount = this.buckets.map(() => 0);
    this.reduced = this.buckets.map(() => false);
    this.trainers.forEach((t, r) => {
      const index = new Map(this.params[r]!.map((p, i) => [p, i]));
      t.nn.onGradReady = (p) => this.gradReady(index.get(p));
    });
  }

  private gradReady(i: number | undefined): void {
    if (i === undefined) return;
    const b = this.bucketOf[i]!;
    if (++this.readyCount[b]! === this.trainers.length * this.buckets[b]!.params.length) this.reduceBucket(b);
  }

  private reduceBucket(b: number): void {
    if (this.reduced[b]) return;
    this.reduced[b] = true;
    this.reduction!.reduceBucket(b);
  }

  /** Parameters of bucket `b` that received a gradient this step (the same on every rank). */
  liveParams(b: number): number[] {
    return this.buckets[b]!.params.filter((i) => this.params[0]![i]!.gradWritten);
  }

  /**
   * Submits one step's forward and backward on every replica (each on its shard of the global batch);
   * buckets are reduced as they complete, and those with an unused parameter after the backward.
   */
  async forwardBackward(): Promise<Var[]> {
    this.readyCount.fill(0);
    this.reduced.fill(false);
    const global = this.trainers[0]!.nextBatch();
    const losses: Var[] = [];
    for (let r = 0; r < this.trainers.length; r++) {
      const t = this.trainers[r]!;
      t.seedLossScale();
      const loss = t.submitBatch(shardBatch(global, r, this.trainers.length));
      await loss.backward();
      losses.push(loss);
    }
    for (let b = 0; b < this.buckets.length; b++) this.reduceBucket(b);
    return losses;
  }

  /** Largest |difference| between any replica's parameters and rank 0's (reads every parameter). */
  async maxDivergence(): Promise<number> {
    let worst = 0;
    for (let i = 0; i < this.params[0]!.length; i++) {
      const ref = await this.params[0]![i]!.values();
      for (let r = 1; r < this.params.length; r++) {
        const v = await this.params[r]![i]!.values();
        for (let k = 0; k < ref.length; k++) {
          const d = Math.abs(v[k]! - ref[k]!);
          if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
        }
      }
    }
    return worst;
  }

  /** Fails unless every replica starts from exactly the same parameters. */
  async verifyIdentical(): Promise<void> {
    const d = await this.maxDivergence();
    if (d !== 0)
      throw new TandemError(
        'TANDEM_ERR_INTERNAL',
        `data parallel: the replicas were not initialised identically (max difference ${d})`,
      );
  }

  endStep(): void {
    for (const t of this.trainers) t.endStep();
  }

  dispose(): void {
    for (const t of this.trainers) t.nn.onGradReady = null;
    this.reduction?.dispose();
    this.comm.close();
  }
}

/** Plain data parallelism: each bucket all-reduced (mean) in place, then every replica's own AdamW step. */
export class AllReduceGrads implements GradReduction {
  constructor(private readonly replicas: Replicas) {}

  reduceBucket(b: number): void {
    const live = this.replicas.liveParams(b);
    if (live.length === 0) return;
    const perRank = this.replicas.params.map((ps) => live.map((i) => ps[i]!.grad!));
    this.replicas.comm.allReduceMany(perRank, 'avg');
  }

  async update(lr: number): Promise<void> {
    for (const t of this.replicas.trainers) await t.update(lr);
  }

  dispose(): void {}
}

/**
 * Runs spec.steps steps of `replicas` with their reduction, reporting each step's loss (the mean of the
 * replicas' shard losses = the whole batch's) one step behind the devices, like Trainer.run.
 */
export async function runReplicas(
  replicas: Replicas,
  onStep: (r: StepReport) => void = () => undefined,
  signal?: AbortSignal,
): Promise<{ finalLoss: number; steps: number }> {
  const lead = replicas.trainers[0]!;
  const samples = lead.samplesPerStep * replicas.trainers.length;
  let previous: { it: number; losses: Var[]; start: number; lr: number } | null = null;
  let last: StepReport | null = null;
  let steps = 0;
  const finish = async (p: NonNullable<typeof previous>, end: number): Promise<void> => {
    const values = await Promise.all(p.losses.map((l) => l.item()));
    const loss = values.reduce((a, b) => a + b, 0) / values.length;
    if (!Number.isFinite(loss))
      throw new TandemError('TANDEM_ERR_UNSTABLE', `train: the loss became ${loss} at step ${p.it + 1}`, {
        step: p.it + 1,
      });
    const stepMs = end - p.start;
    last = {
      step: p.it + 1,
      loss,
      lr: p.lr,
      throughput: (samples * 1000) / Math.max(stepMs, 1e-3),
      unit: lead.data.kind === 'tokens' ? 'tokens' : 'images',
      stepMs,
      mfu: null,
    };
    onStep(last);
  };
  for (let it = 0; it < replicas.spec.steps; it++) {
    if (signal?.aborted) break;
    const start = performance.now();
    const lr = lead.lrAt(it);
    const losses = await replicas.forwardBackward();
    await replicas.reduction!.update(lr);
    replicas.endStep();
    steps = it + 1;
    if (previous !== null) await finish(previous, start);
    previous = { it, losses, start, lr };
  }
  if (previous !== null) await finish(previous, performance.now());
  return { finalLoss: (last as StepReport | null)?.loss ?? NaN, steps };
}
