/**
 * Collectives over one tensor per rank (a rank is a device; `cuda0#1` is a second rank on cuda0):
 * all-reduce (sum, avg), reduce-scatter, all-gather, broadcast. Each is ordered like a kernel by the
 * tensors it touches — after their writers, before later readers — so the scheduler overlaps it with
 * every task that touches other tensors (a data-parallel step's all-reduce of the last layers' gradients
 * runs while the backward of the first layers computes).
 *
 * Two engines:
 *  - the backend's CollectiveGroup (NCCL on CUDA) when every rank is a distinct device of one backend
 *    that offers it: one task over all ranks (its tensors each on their rank's memory node), run on
 *    per-GPU comm streams, shown in traces on "cuda0.comm+cuda1.comm";
 *  - portable: ordinary tasks (copy, axpy, scale, onnx_slice, onnx_concat) on the ranks' devices,
 *    with the runtime's copies between them — any device kind, ranks sharing a device, no library.
 */
import type { DType } from '../core/dtype.js';
import { isFloat } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type {
  BackendStatus,
  CollectiveCall,
  CollectiveGroup,
  CollectiveOp,
  Device,
  ReduceOp,
} from '../devices/device.js';
import type { AccessMode } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import type { SubmitRequest } from './submit.js';
import type { PlacedWork, TaskHandle, TaskKernel } from './task.js';

export type { CollectiveOp, ReduceOp };
export type CollectiveEngine = 'auto' | 'nccl' | 'portable';

export interface CommunicatorOptions {
  /** 'auto' (default): the backend's group when possible, else portable. */
  readonly engine?: CollectiveEngine;
}

/** What a communicator needs from the runtime (passed in: this file must not import runtime.ts). */
export interface CollectiveHost {
  readonly devices: readonly Device[];
  readonly backends: readonly BackendStatus[];
  submit(req: SubmitRequest): TaskHandle;
  submitPlaced(
    name: string,
    tensors: readonly Tensor[],
    modes: readonly AccessMode[],
    work: PlacedWork,
  ): TaskHandle;
  tensor(shape: readonly number[], dtype?: DType): Tensor;
  free(t: Tensor): void;
  checkTensor(t: unknown, what: string): asserts t is Tensor;
}

/** The runtime's record of a placed task's kernel: no implementation, never in a device queue. */
export const placedKernel: TaskKernel = {
  def: { name: '__collective', args: [], validate: () => undefined, cost: () => ({ flops: 0, bytes: 0 }) },
  impls: new Map(),
};

interface PlacedPart {
  readonly op: CollectiveOp;
  readonly reduce: ReduceOp;
  readonly root: number;
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[] | null;
  readonly count: number;
}

/** A submitted collective: `done` settles when every rank's tensor holds its result. */
export interface CollectiveHandle {
  readonly done: Promise<void>;
}

const RANK = /^([A-Za-z0-9_.-]+?)(?:#(\d+))?$/;

export class Communicator {
  readonly ranks: readonly string[];
  /** The device of each rank. */
  readonly devices: readonly Device[];
  /** "nccl 2.27.3" or "portable". */
  readonly engine: string;
  /** Why 'auto' chose the portable engine (null when it did not, or it was asked for). */
  portableBecause: string | null = null;
  private readonly group: CollectiveGroup | null;
  private closed = false;

  constructor(
    private readonly host: CollectiveHost,
    ranks: readonly string[],
    options: CommunicatorOptions = {},
  ) {
    if (!Array.isArray(ranks) || ranks.length === 0)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'collectives: give at least one rank (a device id)',
      );
    const seen = new Set<string>();
    this.devices = ranks.map((r) => {
      const m = typeof r === 'string' ? RANK.exec(r) : null;
      if (m === null)
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `collectives: ${JSON.stringify(r)} is not a rank (device id, or id#k)`,
        );
      if (seen.has(r))
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `collectives: rank ${r} is listed twice (two ranks on one device are ${m[1]}#0, ${m[1]}#1)`,
        );
      seen.add(r);
      const d = host.devices.find((x) => x.info.id === m[1]);
      if (d === undefined)
        throw new TandemError(
          'TANDEM_ERR_NO_DEVICE',
          `collectives: no device ${m[1]} (devices: ${host.devices.map((x) => x.info.id).join(', ') || 'none'})`,
        );
      return d;
    });
    this.ranks = [...ranks];
    const engine = options.engine ?? 'auto';
    if (!['auto', 'nccl', 'portable'].includes(engine))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `collectives: unknown engine ${JSON.stringify(engine)}`,
      );
    this.group = engine === 'portable' ? null : this.openGroup(engine === 'nccl');
    this.engine = this.group?.engine ?? 'portable';
  }

  /** The backend's group over these devices, or null (auto) when it has none or ranks share a device. */
  private openGroup(required: boolean): CollectiveGroup | null {
    const distinct = new Set(this.devices).size === this.devices.length;
    const backend = this.host.backends.find((b) => this.devices.every((d) => b.devices.includes(d)));
    let why: string;
    if (!distinct) why = 'ranks share a device';
    else if (!backend?.collectives) why = `the ${this.devices[0]!.info.kind} backend has no collectives`;
    else {
      try {
        return backend.collectives(this.devices);
      } catch (e) {
        if (required) throw e;
        this.portableBecause = e instanceof Error ? e.message : String(e);
        return null;
      }
    }
    if (required)
      throw new TandemError('TANDEM_ERR_UNSUPPORTED', `collectives: NCCL cannot run here: ${why}`);
    this.portableBecause = why;
    return null;
  }

  /** Every rank's tensor becomes the sum (or mean) over ranks, in place. */
  allReduce(tensors: readonly Tensor[], op: ReduceOp = 'sum'): CollectiveHandle {
    this.check('allReduce', tensors, tensors, op, 1, 1);
    if (this.group !== null) return this.placed('allReduce', op, 0, tensors, null, tensors[0]!.size);
    const acc = this.reduceInto(tensors, op, 'allReduce');
    const last = tensors.map((t, i) => this.task('copy', { x: acc, y: t }, {}, i, `allReduce.${op}`));
    this.host.free(acc);
    return handle(last);
  }

  /**
   * A bucket: `perRank[r]` is rank r's list of tensors (the same shapes on every rank), each all-reduced
   * in place — with NCCL one task and one grouped launch for the whole bucket.
   */
  allReduceMany(perRank: readonly (readonly Tensor[])[], op: ReduceOp = 'sum'): CollectiveHandle {
    const n = this.ranks.length;
    if (
      !Array.isArray(perRank) ||
      perRank.length !== n ||
      perRank.some((l) => !Array.isArray(l) || l.length !== perRank[0]!.length)
    )
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `allReduce: give one list of tensors per rank (${n}), all as long`,
      );
    const m = perRank[0]!.length;
    const columns = Array.from({ length: m }, (_, j) => perRank.map((l) => l[j]!));
    for (const c of columns) this.check('allReduce', c, c, op, 1, 1);
    if (m === 0) return handle([]);
    if (this.group !== null)
      return this.placedMany(
        `allReduce.${op}[${m}]`,
        columns.map((c) => ({
          op: 'allReduce',
          reduce: op,
          root: 0,
          inputs: c,
          outputs: null,
          count: c[0]!.size,
        })),
      );
    const last: TaskHandle[] = [];
    for (const c of columns) {
      const acc = this.reduceInto(c, op, 'allReduce');
      c.forEach((t, i) => last.push(this.task('copy', { x: acc, y: t }, {}, i, `allReduce.${op}`)));
      this.host.free(acc);
    }
    return handle(last);
  }

  /** Rank i's output ← slice i of the reduction of every rank's input (inputs hold ranks × output). */
  reduceScatter(
    inputs: readonly Tensor[],
    outputs: readonly Tensor[],
    op: ReduceOp = 'sum',
  ): CollectiveHandle {
    const n = this.ranks.length;
    this.check('reduceScatter', inputs, outputs, op, n, 1);
    const k = outputs[0]!.size;
    if (this.group !== null) return this.placed('reduceScatter', op, 0, inputs, outputs, k);
    const acc = this.reduceInto(inputs, op, 'reduceScatter');
    const last = outputs.map((y, i) =>
      this.task(
        'onnx_slice',
        { x: acc, y },
        { starts: `${i * k}`, ends: `${(i + 1) * k}` },
        i,
        'reduceScatter',
      ),
    );
    this.host.free(acc);
    return handle(last);
  }

  /** Every rank's output ← the concatenation of all ranks' inputs, in rank order. */
  allGather(inputs: readonly Tensor[], outputs: readonly Tensor[]): CollectiveHandle {
    const n = this.ranks.length;
    this.check('allGather', inputs, outputs, 'sum', 1, n);
    const k = inputs[0]!.size;
    if (this.group !== null) return this.placed('allGather', 'sum', 0, inputs, outputs, k);
    const last: TaskHandle[] = [];
    outputs.forEach((y, i) => {
      for (let j = 0; j < n; j++)
        last.push(this.task('onnx_concat', { x: inputs[j]!, y }, { axis: 0, offset: j * k }, i, 'allGather'));
    });
    return handle(last);
  }

  /** Every rank's tensor ← rank `root`'s. */
  broadcast(tensors: readonly Tensor[], root = 0): CollectiveHandle {
    this.check('broadcast', tensors, tensors, 'sum', 1, 1);
    if (!Number.isInteger(root) || root < 0 || root >= this.ranks.length)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `broadcast: root ${root} is not a rank (0..${this.ranks.length - 1})`,
      );
    if (this.group !== null) return this.placed('broadcast', 'sum', root, tensors, null, tensors[0]!.size);
    const last = tensors.flatMap((t, i) =>
      i === root ? [] : [this.task('copy', { x: tensors[root]!, y: t }, {}, i, 'broadcast')],
    );
    return handle(last);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.group?.close();
  }

  // ---- engines ----------------------------------------------------------------------------------

  /** One task over every rank's tensors (in place when `outputs` is null), run by the backend's group. */
  private placed(
    op: CollectiveOp,
    reduce: ReduceOp,
    root: number,
    inputs: readonly Tensor[],
    outputs: readonly Tensor[] | null,
    count: number,
  ): CollectiveHandle {
    return this.placedMany(`${op}${op === 'allReduce' || op === 'reduceScatter' ? `.${reduce}` : ''}`, [
      { op, reduce, root, inputs, outputs, count },
    ]);
  }

  /**
   * One task over every rank's tensors of every part (a part in place when its outputs are null), run
   * by the backend's group as one call: NCCL groups the parts into one launch per rank.
   */
  private placedMany(name: string, parts: readonly PlacedPart[]): CollectiveHandle {
    const group = this.group!;
    const n = this.ranks.length;
    const tensors: Tensor[] = [];
    const modes: AccessMode[] = [];
    const layout: { send: number; recv: number }[] = [];
    for (const p of parts) {
      const send = tensors.length;
      tensors.push(...p.inputs);
      modes.push(...p.inputs.map((): AccessMode => (p.outputs === null ? 'rw' : 'r')));
      const recv = p.outputs === null ? send : tensors.length;
      if (p.outputs !== null) {
        tensors.push(...p.outputs);
        modes.push(...p.outputs.map((): AccessMode => 'w'));
      }
      layout.push({ send, recv });
    }
    const nodes = tensors.map((_, i) => this.devices[i % n]!.node);
    const task = this.host.submitPlaced(name, tensors, modes, {
      nodes,
      deviceId: this.ranks.join('+'),
      queueId: group.queueIds.join('+'),
      run: (buffers, done) => {
        const calls: CollectiveCall[] = parts.map((p, k) => ({
          op: p.op,
          reduce: p.reduce,
          root: p.root,
          dtype: p.inputs[0]!.dtype,
          count: p.count,
          send: buffers.slice(layout[k]!.send, layout[k]!.send + n),
          recv: buffers.slice(layout[k]!.recv, layout[k]!.recv + n),
        }));
        group.run(calls, done);
      },
    });
    return {
      get done() {
        return task.done;
      },
    };
  }

  /** Portable: the sum (mean) of `xs` into a new tensor on rank 0's device, ((x0 + x1) + x2)…. */
  private reduceInto(xs: readonly Tensor[], op: ReduceOp, name: string): Tensor {
    const acc = this.host.tensor(xs[0]!.shape, xs[0]!.dtype);
    this.task('copy', { x: xs[0]!, y: acc }, {}, 0, name);
    for (let j = 1; j < xs.length; j++) this.task('axpy', { x: xs[j]!, y: acc }, { alpha: 1 }, 0, name);
    if (op === 'avg' && xs.length > 1) this.task('scale', { x: acc }, { alpha: 1 / xs.length }, 0, name);
    return acc;
  }

  private task(
    kernel: string,
    args: Readonly<Record<string, Tensor>>,
    scalars: Readonly<Record<string, number | string>>,
    rank: number,
    name: string,
  ): TaskHandle {
    return this.host.submit({
      kernel,
      args,
      scalars,
      device: this.devices[rank]!.info.id,
      name: `${name}:${kernel}`,
    });
  }

  // ---- validation -------------------------------------------------------------------------------

  private check(
    op: CollectiveOp,
    inputs: readonly Tensor[],
    outputs: readonly Tensor[],
    reduce: ReduceOp,
    inPerOut: number,
    outPerIn: number,
  ): void {
    if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', `${op}: the communicator is closed`);
    const n = this.ranks.length;
    if (!Array.isArray(inputs) || inputs.length !== n || !Array.isArray(outputs) || outputs.length !== n)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: give one tensor per rank (${n})`);
    if (reduce !== 'sum' && reduce !== 'avg')
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `${op}: unknown reduction ${JSON.stringify(reduce)} (sum, avg)`,
      );
    [...inputs, ...outputs].forEach((t) => this.host.checkTensor(t, op));
    if (new Set(inputs).size !== n || new Set(outputs).size !== n)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${op}: every rank needs a tensor of its own`);
    const x0 = inputs[0]!;
    if (!isFloat(x0.dtype))
      throw new TandemError(
        'TANDEM_ERR_DTYPE',
        `${op}: ${x0.dtype} tensors; collectives take f32, f64, f16, bf16`,
      );
    const sliced = inPerOut !== 1 || outPerIn !== 1;
    for (let i = 0; i < n; i++) {
      const x = inputs[i]!;
      const y = outputs[i]!;
      if (x.dtype !== x0.dtype || y.dtype !== x0.dtype)
        throw new TandemError('TANDEM_ERR_DTYPE', `${op}: every tensor must be ${x0.dtype}`);
      if (x.size !== x0.size || x.size * outPerIn !== y.size * inPerOut)
        throw new TandemError(
          'TANDEM_ERR_SHAPE',
          `${op}: rank ${i} has ${x.size} → ${y.size} elements; want ${x0.size} → ${(x0.size * outPerIn) / inPerOut}`,
        );
      if (sliced && (x.shape.length !== 1 || y.shape.length !== 1))
        throw new TandemError('TANDEM_ERR_SHAPE', `${op}: inputs and outputs must be flat (rank 1)`);
    }
  }
}

function handle(last: readonly TaskHandle[]): CollectiveHandle {
  return {
    get done() {
      return Promise.all(last.map((t) => t.done)).then(() => undefined);
    },
  };
}
