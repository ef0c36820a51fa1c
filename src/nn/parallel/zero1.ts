/**
 * ZeRO-1: the optimizer state is sharded. Each bucket's parameters are laid end to end in a flat
 * space (padded to a multiple of the rank count) and rank r owns the r-th equal slice of it. When a
 * bucket's gradients are final on every rank, each rank flattens its gradients and a reduce-scatter
 * (mean) leaves rank r the averaged gradients of its slice — during the backward, like data
 * parallelism's all-reduce. The update: each rank's AdamW runs on its slice only (moments and f32
 * masters for 1/N of the parameters), as pieces that keep each parameter's weight-decay rule; the global
 * norm for clipping is the all-reduced sum of the ranks' partial sums of squares; then an all-gather of
 * the updated slices gives every replica the whole new parameters.
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import type { Nn } from '../context.js';
import { AdamW } from '../optim/adamw.js';
import { adamwOptions } from '../train.js';
import { Var } from '../var.js';
import type { GradReduction, Replicas } from './data-parallel.js';

/** A run of one parameter's elements inside a rank's slice of a bucket. */
interface Piece {
  readonly param: number;
  /** First element within the parameter (row-major). */
  readonly from: number;
  readonly length: number;
  /** First element within the rank's slice. */
  readonly at: number;
  /** The rank's working copy of these parameter elements, with the optimizer state behind it. */
  readonly v: Var;
}

interface RankBucket {
  readonly gradFlat: Tensor;
  readonly gradShard: Tensor;
  readonly paramShard: Tensor;
  readonly paramFlat: Tensor;
  readonly pieces: Piece[];
}

export class Zero1 implements GradReduction {
  /** state[rank][bucket] */
  private readonly state: RankBucket[][];
  /** offsets[bucket][k]: where the bucket's k-th parameter starts in its flat space. */
  private readonly offsets: number[][];
  private readonly optimizers: AdamW[];

  constructor(private readonly replicas: Replicas) {
    const n = replicas.ranks.length;
    if (replicas.trainers[0]!.scaler !== null)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        'ZeRO-1 does not take fp16 with loss scaling; use bf16 or f32, or --parallel data',
      );
    const base = adamwOptions(replicas.spec);
    this.offsets = replicas.buckets.map((b) => {
      let at = 0;
      return b.params.map((i) => {
        const o = at;
        at += replicas.params[0]![i]!.data.size;
        return o;
      });
    });
    this.state = replicas.trainers.map((t, r) => {
      // The replica's own full-size optimizer state is what ZeRO-1 saves: free it.
      t.optimizer.dispose();
      return replicas.buckets.map((b, k) => this.rankBucket(t.nn, r, n, k, b.elements));
    });
    this.optimizers = replicas.trainers.map((t, r) => {
      const decays = new Map<Var, boolean>();
      const pieces = this.state[r]!.flatMap((rb) => rb.pieces);
      for (const p of pieces) {
        const whole = replicas.params[r]![p.param]!;
        decays.set(p.v, !(base.decayMatricesOnly === true && whole.shape.length < 2));
      }
      return new AdamW(
        t.nn,
        pieces.map((p) => p.v),
        { ...base, decayFor: (v) => decays.get(v) ?? true },
      );
    });
  }

  private rankBucket(nn: Nn, r: number, n: number, k: number, elements: number): RankBucket {
    const shard = Math.ceil(elements / n);
    const dtype = nn.dtype;
    const rb: RankBucket = {
      gradFlat: nn.tensor([shard * n], dtype),
      gradShard: nn.tensor([shard], dtype),
      paramShard: nn.tensor([shard], dtype),
      paramFlat: nn.tensor([shard * n], dtype),
      pieces: [],
    };
    // The padding past the last parameter is never written: zeros, so it adds nothing to any sum.
    nn.submit('fill', { y: rb.gradFlat }, { value: 0 });
    const lo = r * shard;
    const hi = Math.min(lo + shard, elements);
    const bucket = this.replicas.buckets[k]!;
    bucket.params.forEach((i, j) => {
      const start = this.offsets[k]![j]!;
      const p = this.replicas.params[r]![i]!;
      const a = Math.max(lo, start);
      const e = Math.min(hi, start + p.data.size);
      if (a >= e) return;
      const piece = nn.tensor([e - a], dtype);
      const flat = this.flatView(nn, p.data);
      nn.submit('onnx_slice', { x: flat, y: piece }, { starts: `${a - start}`, ends: `${e - start}` });
      if (flat !== p.data) nn.free(flat);
      rb.pieces.push({
        param: i,
        from: a - start,
        length: e - a,
        at: a - lo,
        v: new Var(nn, piece, 'parameter', true, `${p.name}[${a - start}:${e - start}]`),
      });
    });
    return rb;
  }

  /** `t` as a flat tensor: itself when rank 1, else a reshaping copy (the caller frees it). */
  private flatView(nn: Nn, t: Tensor): Tensor {
    if (t.shape.length === 1) return t;
    const flat = nn.tensor([t.size], t.dtype);
    nn.submit('copy', { x: t, y: flat });
    return flat;
  }

  reduceBucket(k: number): void {
    const bucket = this.replicas.buckets[k]!;
    this.replicas.trainers.forEach((t, r) => {
      const rb = this.state[r]![k]!;
      bucket.params.forEach((i, j) => {
        const p = this.replicas.params[r]![i]!;
        if (p.grad === null || !p.gradWritten)
          throw new TandemError(
            'TANDEM_ERR_UNSUPPORTED',
            `ZeRO-1: parameter ${p.name || i} received no gradient this step (every parameter must be used)`,
          );
        const flat = this.flatView(t.nn, p.grad);
        t.nn.submit('onnx_concat', { x: flat, y: rb.gradFlat }, { axis: 0, offset: this.offsets[k]![j]! });
        if (flat !== p.grad) t.nn.free(flat);
      });
    });
    this.flushAll();
    this.replicas.comm.reduceScatter(
      this.state.map((s) => s[k]!.gradFlat),
      this.state.map((s) => s[k]!.gradShard),
      'avg',
    );
  }

  async update(lr: number): Promise<void> {
    const trainers = this.replicas.trainers;
    const scratch: Tensor[] = [];
    trainers.forEach((t, r) => {
      for (const rb of this.state[r]!)
        for (const p of rb.pieces) {
          const g = t.nn.tensor([p.length], t.nn.dtype);
          t.nn.submit(
            'onnx_slice',
            { x: rb.gradShard, y: g },
            { starts: `${p.at}`, ends: `${p.at + p.length}` },
          );
          p.v.grad = g;
          p.v.gradWritten = true;
          scratch.push(g);
        }
      this.optimizers[r]!.computeNorm();
    });
    // Each rank summed the squares of its slice; their sum is the whole gradient's.
    this.flushAll();
    this.replicas.comm.allReduce(
      this.optimizers.map((o) => o.normTensor!),
      'sum',
    );
    trainers.forEach((t, r) => {
      this.optimizers[r]!.applyUpdate({ lr });
      for (const rb of this.state[r]!)
        for (const p of rb.pieces)
          t.nn.submit('onnx_concat', { x: p.v.data, y: rb.paramShard }, { axis: 0, offset: p.at });
    });
    this.flushAll();
    this.replicas.buckets.forEach((_, k) =>
      this.replicas.comm.allGather(
        this.state.map((s) => s[k]!.paramShard),
        this.state.map((s) => s[k]!.paramFlat),
      ),
    );
    trainers.forEach((t, r) => {
      this.replicas.buckets.forEach((b, k) => {
        const flat = this.state[r]![k]!.paramFlat;
        b.params.forEach((i, j) => {
          const p = this.replicas.params[r]![i]!;
          const at = this.offsets[k]![j]!;
          const slice = { starts: `${at}`, ends: `${at + p.data.size}` };
          if (p.shape.length === 1) {
            t.nn.submit('onnx_slice', { x: flat, y: p.data }, slice);
            return;
          }
          const tmp = t.nn.tensor([p.data.size], p.dtype);
          t.nn.submit('onnx_slice', { x: flat, y: tmp }, slice);
          t.nn.submit('copy', { x: tmp, y: p.data });
          t.nn.free(tmp);
        });
      });
    });
    for (const o of this.optimizers) o.zeroGrad();
    for (const rb of this.state.flat()) for (const p of rb.pieces) p.v.grad = null;
    this.flushAll();
    for (const g of scratch) trainers[0]!.rt.free(g);
    await Promise.resolve();
  }

  /**
   * Sequence mode: the kernels each replica has collected go to the runtime before a collective that
   * reads or writes their tensors is submitted (the runtime orders tasks by submission).
   */
  private flushAll(): void {
    for (const t of this.replicas.trainers) t.nn.flush();
  }

  /** Bytes of optimizer state (moments, masters) each rank holds: what ZeRO-1 divides by N. */
  stateBytesPerRank(): number[] {
    return this.optimizers.map((o) =>
      o.params.reduce((sum, p) => {
        const s = o.stateTensors(p);
        return sum + s.m.bytes + s.v.bytes + (s.master?.bytes ?? 0);
      }, 0),
    );
  }

  dispose(): void {
    for (const o of this.optimizers) o.dispose();
    const rt = this.replicas.trainers[0]!.rt;
    for (const rb of this.state.flat()) {
      for (const t of [rb.gradFlat, rb.gradShard, rb.paramShard, rb.paramFlat]) rt.free(t);
      for (const p of rb.pieces) rt.free(p.v.data);
    }
  }
}
