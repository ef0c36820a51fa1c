/**
 * One GPU behind the Device contract: memory node, compute queue, host transfers, graphs, and the
 * fault path (a faulting kernel fails its tasks with TANDEM_ERR_DEVICE_FAULT, the context is reset,
 * the memory node's epoch moves on so lost replicas can be reported, and later tasks run normally).
 */
import { TandemError, asTandemError } from '../../core/errors.js';
import type {
  Device,
  DeviceCaps,
  DeviceInfo,
  Done,
  ExecQueue,
  HostBuffer,
  LaunchRequest,
  LaunchTiming,
} from '../device.js';
import { CompletionPoller } from './completion.js';
import type { CudaContext } from './context.js';
import type { CudaDriver } from './ffi/driver.js';
import { CudaGraph, type GraphLaunch } from './graph.js';
import { EAGER_MAX_BYTES, HostTransfers, type Eager } from './host-transfer.js';
import { isCudaKernelImpl, type CudaArg } from './kernel-api.js';
import { LaunchBatcher } from './launch-batcher.js';
import { Launcher } from './launcher.js';
import { CudaBuffer, CudaMemoryNode } from './memory-node.js';
import type { ProgramCache } from './program-cache.js';
import { SequenceGraphs } from './sequence-graphs.js';

/** CUresults after which the context is unusable until reset (illegal address, launch failure, ...). */
const STICKY = new Set([700, 702, 714, 715, 716, 717, 718, 719, 720, 999]);
const QUEUE_DEPTH = 256;
/**
 * Open CUDA devices in this process. Eager read-back is used only with one: copies between GPUs
 * (peer.ts) write buffers without going through this device, so they could not drop a stale entry.
 */
let openDevices = 0;

export interface CudaDeviceParts {
  readonly id: string;
  readonly driver: CudaDriver;
  readonly context: CudaContext;
  readonly programs: ProgramCache;
  readonly memoryBytes: number;
  readonly smCount: number;
  readonly view: (ptr: number, bytes: number) => Uint8Array;
  readonly registerSabs: boolean;
}

export class CudaDevice implements Device {
  info!: DeviceInfo;
  readonly node: CudaMemoryNode;
  readonly queues: readonly ExecQueue[];
  /** peerCopy becomes true when the backend enabled peer access to another GPU (peer.ts). */
  caps: DeviceCaps = { peerCopy: false, customSource: ['cuda'] };
  /** potrf when libcusolver was not found: the scheduler places it on another device (Device). */
  readonly unavailableOps?: ReadonlySet<string>;
  readonly id: string;
  readonly context: CudaContext;
  readonly poller: CompletionPoller;
  readonly launcher: Launcher;
  /** Holds program launches to the end of the turn and replays repeated runs of them as graphs. */
  readonly batcher: LaunchBatcher;
  readonly transfers: HostTransfers;
  readonly programs: ProgramCache;
  /** Prepared sequences replayed as CUDA graphs (ExecQueue.replay). */
  readonly sequenceGraphs: SequenceGraphs;
  /** How many faults this device has recovered from. */
  faults = 0;
  private readonly failedTasks = new Set<number>();
  private readonly resetListeners: ((reason: string) => void)[] = [];
  private closed = false;
  private resetting = false;
  private counted = true;

  constructor(parts: CudaDeviceParts) {
    this.id = parts.id;
    this.context = parts.context;
    if (parts.context.cusolver === null) this.unavailableOps = new Set(['potrf']);
    this.programs = parts.programs;
    const makeCurrent = (): void => this.context.makeCurrent();
    this.poller = new CompletionPoller(parts.driver, makeCurrent, (rc, call) => this.fault(rc, call));
    // The closure reads this.transfers at call time (it is created below).
    this.node = new CudaMemoryNode(parts.id, parts.memoryBytes, parts.context, () =>
      this.transfers.reclaimDeadRanges(),
    );
    this.launcher = new Launcher(parts.context, parts.programs, parts.smCount);
    this.batcher = new LaunchBatcher({
      context: parts.context,
      launcher: this.launcher,
      poller: this.poller,
      epoch: () => this.node.epoch,
      launchError: (e, label) => this.launchError(e, label),
      capture: (body) => CudaGraph.capture(this, body),
    });
    this.transfers = new HostTransfers(
      parts.driver,
      this.poller,
      makeCurrent,
      parts.view,
      parts.registerSabs,
    );
    this.sequenceGraphs = new SequenceGraphs({
      id: parts.id,
      context: parts.context,
      launcher: this.launcher,
      poller: this.poller,
      node: this.node,
      flushLaunches: () => this.batcher.flush(),
      dropEager: (buf) => this.transfers.dropEager(buf),
      isFailed: (taskId) => this.failedTasks.has(taskId),
      rememberFailure: (taskId) => this.rememberFailure(taskId),
      isClosed: () => this.closed,
    });
    openDevices++;
    this.queues = [
      {
        id: `${parts.id}.compute`,
        depth: QUEUE_DEPTH,
        launch: (req, done) => this.launch(req, done),
        replay: (req, done) => this.sequenceGraphs.replay(req, done),
      },
    ];
  }

  /** Listeners run after a fault reset, before in-flight work is failed (the runtime drops replicas here). */
  onMemoryLost(listener: (reason: string) => void): void {
    this.resetListeners.push(listener);
  }

  private launch(req: LaunchRequest, done: (err: Error | null, timing?: LaunchTiming) => void): void {
    const fail = (err: Error): void => {
      this.rememberFailure(req.taskId);
      queueMicrotask(() => done(err));
    };
    for (const id of req.after) {
      if (this.failedTasks.has(id)) {
        return fail(
          new TandemError(
            'TANDEM_ERR_DEPENDENCY_FAILED',
            `task ${req.taskId} (${req.op}): task ${id} before it on ${this.id} failed`,
          ),
        );
      }
    }
    if (!isCudaKernelImpl(req.impl)) {
      return fail(
        new TandemError(
          'TANDEM_ERR_KERNEL_FAILED',
          `${req.op}: the CUDA implementation is not a CUDA program or native kernel`,
        ),
      );
    }
    const args: CudaArg[] = [];
    for (const a of req.args) {
      const buf = a.buffer;
      if (!(buf instanceof CudaBuffer) || buf.node !== this.node) {
        return fail(
          new TandemError('TANDEM_ERR_INTERNAL', `${req.op}: an argument is not in ${this.id} memory`),
        );
      }
      if (this.node.isLost(buf)) {
        return fail(
          new TandemError(
            'TANDEM_ERR_DATA_LOST',
            `${req.op}: an argument's memory on ${this.id} was lost in a device reset`,
          ),
        );
      }
      args.push({ ptr: buf.ptr, desc: a.desc });
      // The kernel may write it: an eager copy of its old contents is stale from here on.
      this.transfers.dropEager(buf);
    }
    // After the lost-data check, so a task on lost memory says so even when the GPU is gone.
    if (this.closed) {
      const why = this.node.unusable ? `: ${this.node.unusable}` : '';
      return fail(new TandemError('TANDEM_ERR_CLOSED', `${this.id} is closed${why}`));
    }
    const impl = req.impl;
    const taskId = req.taskId;
    // Small results the host reads next: copied to pinned memory under the same completion event.
    const readback =
      impl.kind === 'program' && impl.readback && openDevices === 1 ? impl.readback[0] : undefined;
    const eagerBuf = readback === undefined ? undefined : req.args[readback]?.buffer;
    if (impl.kind === 'program' && !(eagerBuf instanceof CudaBuffer && eagerBuf.bytes <= EAGER_MAX_BYTES)) {
      // Held to the end of the turn: repeated runs of small launches replay as CUDA graphs.
      this.batcher.push({
        program: impl,
        args,
        scalars: req.scalars,
        label: `${req.op} on ${this.id}`,
        done: (err) => {
          if (err) this.rememberFailure(taskId);
          done(err);
        },
      });
      return;
    }
    this.batcher.flush();
    // Scratch memory (native kernels only) goes back to the pool once the launch has finished.
    let scratch: CudaBuffer[] | null = null;
    const releaseScratch = (): void => {
      if (scratch) for (const b of scratch) this.node.free(b);
      scratch = null;
    };
    // A check to make once the work has finished (cuSOLVER reports failure in device memory).
    let check: (() => Error | null) | null = null;
    try {
      if (impl.kind === 'program')
        this.launcher.launchProgram(impl, args, req.scalars, this.context.streams.compute);
      else {
        check = this.launcher.run(impl, args, req.scalars, this.context.streams.compute, (bytes) => {
          const b = this.node.alloc(bytes);
          (scratch ??= []).push(b);
          return b.ptr;
        });
      }
    } catch (e) {
      releaseScratch();
      return fail(this.launchError(e, `${req.op} on ${this.id}`));
    }
    let eager: Eager | null = null;
    if (eagerBuf instanceof CudaBuffer && impl.kind === 'program')
      eager = this.transfers.stageEager(eagerBuf, eagerBuf.ptr, eagerBuf.bytes, this.context.streams.compute);
    this.poller.watch(this.context.streams.compute, (err0) => {
      if (eager) this.transfers.eagerDone(eagerBuf as CudaBuffer, eager, !err0);
      let err = err0;
      if (!err && check) {
        try {
          err = check();
        } catch (e) {
          err = asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', `${req.op} on ${this.id}`);
        }
      }
      if (scratch) releaseScratch();
      if (err) this.rememberFailure(taskId);
      done(err);
    });
  }

  /** A failed enqueue as the task's error; a sticky driver error starts fault recovery first. */
  private launchError(e: unknown, label: string): Error {
    const rc = e instanceof TandemError ? e.details['cuResult'] : undefined;
    if (typeof rc === 'number' && STICKY.has(rc)) {
      this.fault(rc, 'launch');
      return this.faultError(rc, 'launch');
    }
    return asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', label);
  }

  private rememberFailure(taskId: number): void {
    if (this.failedTasks.size > 4096) this.failedTasks.clear();
    this.failedTasks.add(taskId);
  }

  /** Host → device on the h2d stream; `done` runs once the bytes are on the GPU. */
  upload(src: HostBuffer, dst: CudaBuffer, bytes: number, done: Done): void {
    this.transfers.dropEager(dst);
    if (this.node.isLost(dst))
      return done(
        new TandemError('TANDEM_ERR_DATA_LOST', `${this.id}: the destination was lost in a device reset`),
      );
    this.guard(done, () => this.transfers.upload(src.sab, dst.ptr, bytes, this.context.streams.h2d, done));
  }

  /** Device → host on the d2h stream. */
  download(src: CudaBuffer, dst: HostBuffer, bytes: number, done: Done): void {
    if (this.node.isLost(src))
      return done(
        new TandemError('TANDEM_ERR_DATA_LOST', `${this.id}: the source was lost in a device reset`),
      );
    // Copied to pinned memory right after the kernel that wrote it: no GPU round trip.
    if (this.transfers.takeEager(src, dst.sab, bytes)) {
      queueMicrotask(() => done(null));
      return;
    }
    this.guard(done, () => this.transfers.download(src.ptr, dst.sab, bytes, this.context.streams.d2h, done));
  }

  /** Device → device (same GPU) on the compute stream, ordered with kernels. */
  copyWithin(src: CudaBuffer, dst: CudaBuffer, bytes: number, done: Done): void {
    this.transfers.dropEager(dst);
    if (this.node.isLost(src) || this.node.isLost(dst))
      return done(new TandemError('TANDEM_ERR_DATA_LOST', `${this.id}: a buffer was lost in a device reset`));
    this.guard(done, () => {
      this.context.makeCurrent();
      if (bytes > 0)
        this.context.driver.check(
          this.context.driver.api.cuMemcpyAsync(dst.ptr, src.ptr, bytes, this.context.streams.compute),
          'cuMemcpyAsync(d2d)',
        );
      this.poller.watch(this.context.streams.compute, done);
    });
  }

  private guard(done: Done, body: () => void): void {
    this.batcher.flush(); // kernels launched earlier in this turn go first
    if (this.closed) return done(new TandemError('TANDEM_ERR_CLOSED', `${this.id} is closed`));
    try {
      body();
    } catch (e) {
      queueMicrotask(() => done(asTandemError(e, 'TANDEM_ERR_DRIVER', this.id)));
    }
  }

  /** Resolves when everything enqueued so far on every stream has finished (never blocks the loop). */
  async sync(): Promise<void> {
    this.batcher.flush();
    const s = this.context.streams;
    await Promise.all(
      [s.compute, s.h2d, s.d2h].map(
        (stream) =>
          new Promise<void>((res, rej) => this.poller.watch(stream, (err) => (err ? rej(err) : res()))),
      ),
    );
  }

  /** Records the launches made by `body` once as a CUDA graph, to replay with one call each time. */
  captureGraph(body: (launch: GraphLaunch) => void): CudaGraph {
    this.batcher.flush();
    return CudaGraph.capture(this, body);
  }

  private faultError(rc: number, call: string, extra: Record<string, unknown> = {}): TandemError {
    return new TandemError(
      'TANDEM_ERR_DEVICE_FAULT',
      `${this.id} faulted (${call}: ${this.context.driver.describe(rc)}); the context was reset and data held only on ${this.id} is lost`,
      { device: this.id, cuResult: rc, epoch: this.node.epoch, ...extra },
    );
  }

  /** The fault path: reset the context, move the memory epoch on, then fail everything in flight. */
  private fault(rc: number, call: string): void {
    if (this.resetting) return;
    this.resetting = true;
    this.faults++;
    const extra: Record<string, unknown> = {};
    try {
      extra['recovery'] = this.context.reset();
    } catch (e) {
      // The GPU could not be recovered in this process: later work fails with TANDEM_ERR_CLOSED and
      // allocations with TANDEM_ERR_DEVICE_UNAVAILABLE (the runtime should route work elsewhere).
      this.closed = true;
      extra['resetError'] = e instanceof Error ? e.message : String(e);
      this.node.unusable = `a kernel faulted and the driver refused a new context (${String(extra['resetError'])})`;
    }
    const err = this.faultError(rc, call, extra);
    this.programs.clear(false);
    this.batcher.failAll(err);
    this.transfers.forgetAll();
    this.poller.forgetEvents();
    this.node.markReset();
    this.resetting = false;
    for (const l of this.resetListeners) l(err.message);
    this.poller.failAll(err);
  }

  async close(): Promise<void> {
    if (this.counted) {
      this.counted = false;
      openDevices--;
    }
    if (this.closed) return;
    try {
      await this.sync();
    } catch {
      // closing after a fault: nothing left to wait for
    }
    this.closed = true;
    this.batcher.dropGraphs();
    this.sequenceGraphs.dropAll();
    this.programs.clear(true);
    this.transfers.close();
    this.node.trim();
    this.context.close();
  }
}
