/**
 * Collectives over CUDA devices with NCCL, one rank per GPU, all driven from this thread. Each GPU
 * gets a communication stream of its own: a collective waits (by a CUDA event, not the host) for the
 * work already queued on that GPU's compute stream, runs on the comm stream, and reports completion
 * through the device's poller. Compute launched later does not wait for it, so kernels that do not
 * touch its buffers overlap with it; the runtime orders the ones that do by task dependencies.
 */
import { TandemError } from '../../core/errors.js';
import type { CollectiveCall, CollectiveGroup, Device, Done } from '../device.js';
import { forgetCurrentContext } from './context.js';
import { CudaDevice } from './cuda-device.js';
import { NCCL_OP, ncclDtype, type Nccl } from './ffi/nccl.js';
import { CudaBuffer } from './memory-node.js';

const CU_STREAM_NON_BLOCKING = 1;
const CU_EVENT_DISABLE_TIMING = 2;

interface Rank {
  readonly device: CudaDevice;
  readonly comm: number;
  readonly stream: number;
  /** Recorded on the compute stream, waited on by the comm stream (reused: the wait copies its state). */
  readonly computeDone: number;
}

export class NcclGroup implements CollectiveGroup {
  readonly engine: string;
  readonly queueIds: readonly string[];
  private readonly ranks: Rank[] = [];
  private closed = false;

  constructor(
    private readonly nccl: Nccl,
    readonly devices: readonly CudaDevice[],
  ) {
    if (devices.length === 0)
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'an NCCL group needs at least one GPU');
    const ordinals = devices.map((d) => d.context.ordinal);
    if (new Set(ordinals).size !== ordinals.length)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `an NCCL group takes each GPU once (got ${devices.map((d) => d.id).join(', ')})`,
      );
    this.engine = `nccl ${nccl.versionString}`;
    this.queueIds = devices.map((d) => `${d.id}.comm`);
    let comms: number[];
    try {
      comms = nccl.initAll(ordinals);
    } finally {
      forgetCurrentContext();
    }
    for (let i = 0; i < devices.length; i++) {
      const d = devices[i]!;
      const drv = d.context.driver;
      d.context.makeCurrent();
      const stream = drv.out1('cuStreamCreate(comm)', (o) =>
        drv.api.cuStreamCreate(o, CU_STREAM_NON_BLOCKING),
      );
      const computeDone = drv.out1('cuEventCreate(comm)', (o) =>
        drv.api.cuEventCreate(o, CU_EVENT_DISABLE_TIMING),
      );
      this.ranks.push({ device: d, comm: comms[i]!, stream, computeDone });
    }
  }

  run(calls: readonly CollectiveCall[], done: Done): void {
    try {
      this.enqueue(calls);
    } catch (e) {
      queueMicrotask(() => done(e instanceof Error ? e : new Error(String(e))));
      return;
    }
    let left = this.ranks.length;
    let failed: Error | null = null;
    for (const r of this.ranks)
      r.device.poller.watch(r.stream, (err) => {
        failed ??= err;
        if (--left === 0) done(failed);
      });
  }

  private enqueue(calls: readonly CollectiveCall[]): void {
    if (this.closed)
      throw new TandemError('TANDEM_ERR_CLOSED', `the NCCL group over ${this.queueIds.join(', ')} is closed`);
    const n = this.ranks.length;
    const args = calls.map((call) => {
      if (call.send.length !== n || call.recv.length !== n)
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `${call.op}: give one send and one receive buffer per rank (${n})`,
        );
      return {
        call,
        dt: ncclDtype(call.dtype),
        op: NCCL_OP[call.reduce],
        send: call.send.map((b, i) => this.pointer(b, i, 'send')),
        recv: call.recv.map((b, i) => this.pointer(b, i, 'receive')),
      };
    });
    // Order after everything already on each compute stream (kernels held to the end of the turn first).
    for (const r of this.ranks) {
      r.device.batcher.flush();
      const drv = r.device.context.driver;
      r.device.context.makeCurrent();
      drv.check(
        drv.api.cuEventRecord(r.computeDone, r.device.context.streams.compute),
        'cuEventRecord(comm)',
      );
      drv.check(drv.api.cuStreamWaitEvent(r.stream, r.computeDone, 0), 'cuStreamWaitEvent(comm)');
    }
    const api = this.nccl.api;
    try {
      this.nccl.group(() => {
        for (const { call, dt, op, send, recv } of args)
          for (let i = 0; i < n; i++) {
            const r = this.ranks[i]!;
            let rc: number;
            switch (call.op) {
              case 'allReduce':
                rc = api.ncclAllReduce(send[i]!, recv[i]!, call.count, dt, op, r.comm, r.stream);
                break;
              case 'reduceScatter':
                rc = api.ncclReduceScatter(send[i]!, recv[i]!, call.count, dt, op, r.comm, r.stream);
                break;
              case 'allGather':
                rc = api.ncclAllGather(send[i]!, recv[i]!, call.count, dt, r.comm, r.stream);
                break;
              case 'broadcast':
                rc = api.ncclBroadcast(send[i]!, recv[i]!, call.count, dt, call.root, r.comm, r.stream);
                break;
            }
            this.nccl.check(rc, `nccl ${call.op} (rank ${i})`);
          }
      });
    } finally {
      // NCCL made each rank's device current in turn.
      forgetCurrentContext();
    }
  }

  private pointer(b: unknown, rank: number, what: string): number {
    const d = this.ranks[rank]!.device;
    if (!(b instanceof CudaBuffer) || b.node !== d.node)
      throw new TandemError(
        'TANDEM_ERR_INTERNAL',
        `the ${what} buffer of rank ${rank} is not in ${d.id} memory`,
      );
    if (d.node.isLost(b))
      throw new TandemError(
        'TANDEM_ERR_DATA_LOST',
        `the ${what} buffer of rank ${rank} was lost in a reset of ${d.id}`,
      );
    d.transfers.dropEager(b);
    return b.ptr;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const r of this.ranks) {
      const drv = r.device.context.driver;
      r.device.context.makeCurrent();
      drv.api.cuStreamSynchronize(r.stream);
      this.nccl.destroy(r.comm);
      forgetCurrentContext();
      r.device.context.makeCurrent();
      drv.api.cuStreamDestroy_v2(r.stream);
      drv.api.cuEventDestroy_v2(r.computeDone);
    }
  }
}

/** The CUDA backend's `collectives` factory: NCCL over the given GPUs of this backend. */
export function ncclCollectives(
  load: () => Nccl,
  own: readonly CudaDevice[],
): (devices: readonly Device[]) => CollectiveGroup {
  return (devices) => {
    const gpus = devices.map((d) => {
      if (!(d instanceof CudaDevice) || !own.includes(d))
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `${d.info.id} is not a GPU of this CUDA backend`,
        );
      return d;
    });
    return new NcclGroup(load(), gpus);
  };
}
