/**
 * The Runtime owns everything it uses: devices (through their backends), memory nodes, the kernel
 * registry, the scheduler policy and observers. Tests build as many isolated runtimes as they like.
 * Its parts beside it (docs/architecture.md): device-set.ts, kernel-eligibility.ts, task-submitter.ts,
 * sequence-submit.ts, tensor-table.ts, memory-gate.ts; the class keeps the API and delegates.
 */
import { freshPagesForLargeBuffers } from '../devices/host-pages.js';
import type { DType, HostArray } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import type { BackendStatus, Device, DeviceKind, Scalars } from '../devices/device.js';
import type { AccessMode, KernelDef } from '../kernels/kernel.js';
import { KERNEL_DEFS, KERNEL_IMPLS } from '../kernels/register.js';
import { Coherence } from '../memory/coherence.js';
import { HostNode } from '../memory/host-node.js';
import { MemoryManager, type NodeUsage } from '../memory/memory-manager.js';
import { Tensor } from '../memory/tensor.js';
import type { Observer } from '../obs/observer.js';
import type { ResolvedConfig, RuntimeConfig } from './config.js';
import { resolveConfig } from './config.js';
import { assertKnownBackends, DeviceSet, type DeviceLoss } from './device-set.js';
import { Executor } from './executor.js';
import {
  hostReadDef,
  hostReadKernel,
  hostWriteDef,
  hostWriteKernel,
  readHost,
  validateHostData,
  writeHost,
} from './host-access.js';
import { KernelRegistry } from './kernel-registry.js';
import { memoryGate } from './memory-gate.js';
import { createPolicy } from './policies/index.js';
import type { SchedulerPolicy, WorkerSlot } from './policies/policy.js';
import type { PlacedWork, Task, TaskHandle } from './task.js';
import { Communicator, type CommunicatorOptions } from './collectives.js';
import { validateSubmit, type SubmitRequest } from './submit.js';
import type { PreparedSequence, SequenceRequest } from './sequence.js';
import { SequenceSubmitter } from './sequence-submit.js';
import { TaskSubmitter } from './task-submitter.js';
import { TensorTable } from './tensor-table.js';
import { BusModel, calibrateBus } from './bus-model.js';
import { LruEvictor } from '../memory/evictor.js';
import { PerfModels } from './perf-model.js';
import { loadModels, modelFile, saveModels } from './perf-model-store.js';
import { submitGraph, type GraphNode } from './submit-graph.js';
import { TaskModels, deviceKey } from './task-models.js';
import { ShareTable, checkShareName, type ShareGroup, type ShareUsage } from './shares.js';
import { shareView } from './share-view.js';

export type { SubmitRequest } from './submit.js';
export type { GraphNode } from './submit-graph.js';
export type { DeviceLoss } from './device-set.js';

export class Runtime {
  readonly config: ResolvedConfig;
  readonly kernels: KernelRegistry;
  readonly memory = new MemoryManager();
  readonly host = new HostNode();
  readonly coherence: Coherence;
  readonly observers: Observer[] = [];
  readonly devices: Device[];
  readonly backends: BackendStatus[];
  readonly workers: WorkerSlot[];
  readonly policy: SchedulerPolicy;
  /** Performance models per (kernel, footprint, device), persisted under cacheDir. */
  readonly models = new PerfModels();
  /** Bandwidth and latency per pair of memory nodes. */
  readonly bus = new BusModel();
  readonly evictor: LruEvictor;
  /** Share groups (fair sharing of devices between tenants or jobs; see shares.ts). */
  readonly shares = new ShareTable();
  private executor!: Executor;
  private readonly tensors: TensorTable;
  private closed = false;
  private readonly deviceSet: DeviceSet;
  private readonly tasks: TaskSubmitter;
  private readonly sequences: SequenceSubmitter;

  private constructor(config: ResolvedConfig) {
    this.config = config;
    this.kernels = new KernelRegistry(KERNEL_DEFS, KERNEL_IMPLS);
    this.kernels.define(hostReadDef);
    this.kernels.define(hostWriteDef);
    this.memory.attach(this.host, config.memoryBudget['host']);
    this.coherence = new Coherence(this.memory, this.host);
    this.tensors = new TensorTable(this, this.coherence, this.host);
    this.policy = createPolicy(config.scheduler);
    this.evictor = new LruEvictor(this.coherence, () => this.tensors.values());
    this.memory.evictor = this.evictor;
    this.coherence.onTransfer = (t, from, to, engine, startUs, endUs) => {
      for (const o of this.observers)
        o.onTransfer?.({
          tensorId: t.id,
          bytes: t.bytes,
          from: from.name,
          to: to.name,
          engine,
          startUs,
          endUs,
        });
    };
    this.deviceSet = new DeviceSet(this);
    this.devices = this.deviceSet.devices;
    this.backends = this.deviceSet.backends;
    this.workers = this.deviceSet.workers;
    this.tasks = new TaskSubmitter(this.deviceSet);
    this.sequences = new SequenceSubmitter(this, this.deviceSet.eligibility, this.tasks);
  }

  static async create(config?: RuntimeConfig): Promise<Runtime> {
    // Big host tensors from fresh pages, never zero-filled on this thread (see host-pages.ts).
    freshPagesForLargeBuffers();
    const resolved = resolveConfig(config);
    assertKnownBackends(resolved.backends);
    const rt = new Runtime(resolved);
    try {
      await rt.deviceSet.open();
      await rt.openModels();
    } catch (e) {
      // Devices opened before the failure (the CPU backend's worker threads, a GPU context) would
      // otherwise hold the process open after the caller has reported the error.
      await Promise.allSettled(rt.devices.map((d) => d.close()));
      throw e;
    }
    const models = new TaskModels(rt.models, rt.bus, rt.coherence, rt.workers);
    models.bindWorkers();
    rt.executor = rt.tasks.executor = new Executor(rt.workers, rt.policy, rt.coherence, rt.observers, models);
    rt.executor.memoryGate = (task, w) => memoryGate(rt, task, w);
    rt.evictor.onWriteback = () => rt.executor.retryDeferred();
    return rt;
  }

  private async openModels(): Promise<void> {
    const { warning } = loadModels(modelFile(this.config.cacheDir), this.models);
    if (warning) this.config.log(warning);
    const routes = this.backends.flatMap((b) => b.copies);
    const nodeKey = (n: { name: string }): string => {
      const d = this.devices.find((x) => x.node === n && n !== this.host);
      return d ? deviceKey(d) : n.name;
    };
    await calibrateBus(this.bus, this.memory.nodes, routes, {
      cacheDir: this.config.cacheDir,
      calibrate: this.config.calibrate,
      deviceKey: nodeKey,
      log: this.config.log,
    });
  }

  /** Writes the performance models to disk (also done by close when they changed). */
  saveModels(): void {
    saveModels(modelFile(this.config.cacheDir), this.models);
  }

  /**
   * Submits a graph whose nodes name their explicit dependencies by id. Everything is validated
   * first (ids, cycles: TANDEM_ERR_CYCLE; each request's arguments), so a bad graph submits nothing.
   */
  submitGraph(nodes: readonly GraphNode[]): Map<string, TaskHandle> {
    this.assertOpen();
    if (Array.isArray(nodes))
      for (const n of nodes) {
        if (!n || typeof n !== 'object') continue;
        validateSubmit(this, this.kernels.get(n.kernel).def, { ...n, deps: [] });
      }
    return submitGraph((req) => this.submit(req), nodes);
  }

  /**
   * `cb` runs once for each device lost for the rest of this process (it faulted and could not be
   * recovered: a sticky CUDA error). It runs synchronously inside the device's fault path, before the
   * tasks in flight there are failed, so an observer added here sees those failures. Returns a function
   * that removes the listener.
   */
  onDeviceLost(cb: (loss: DeviceLoss) => void): () => void {
    return this.deviceSet.onDeviceLost(cb);
  }

  /** The devices lost so far (see onDeviceLost); they stay in `devices` but take no new tasks. */
  get lostDevices(): readonly DeviceLoss[] {
    return [...this.deviceSet.lost.values()];
  }

  /**
   * Gives a device up for the rest of this process on the word of its owner: a watchdog saw a kernel run
   * far past its job's deadline, and a CUDA kernel cannot be stopped in-process (only the end of the
   * process tears its context down). The effects are a sticky fault's: no new task is placed there and
   * the onDeviceLost listeners run; tasks in flight there are left as they are (they may never end).
   * Returns false for an unknown device or one already lost.
   */
  declareDeviceLost(deviceId: string, reason: string): boolean {
    return this.deviceSet.declareDeviceLost(deviceId, reason);
  }

  private assertOpen(): void {
    if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', 'the runtime has been closed');
  }

  /** Creates a tensor; without data it reads as zeros until written. */
  tensor(shape: readonly number[], dtype: DType = 'f32', data?: ArrayLike<number> | HostArray): Tensor {
    this.assertOpen();
    return this.tensors.create(shape, dtype, data);
  }

  submit(req: SubmitRequest): TaskHandle {
    return this.submitCharged(req, null);
  }

  /** Whether `device` (a kind or an id) can run `kernel` on these arguments (an open device's kernel accepts them). */
  canRun(kernel: string, args: Readonly<Record<string, Tensor>>, scalars: Scalars, device: string): boolean {
    return this.deviceSet.eligibility.canRun(this.kernels.get(kernel), args, scalars, device);
  }

  /**
   * `submit`, charging the task to `fallback` when the request names no share group (share views use
   * this rather than copying each request: a spread copy per task cost more than the task).
   */
  submitCharged(req: SubmitRequest, fallback: ShareGroup | null): TaskHandle {
    this.assertOpen();
    const k = this.kernels.get(req?.kernel);
    const v = validateSubmit(this, k.def, req);
    const share = req.share === undefined ? fallback : this.shares.resolve(req.share);
    return this.tasks.kernel(k, v, req, share);
  }

  /**
   * Many kernel calls as one task (see sequence.ts): each step validated as `submit` validates a task,
   * then placed once on a device that implements every step and run back to back in its queue. For
   * fixed chains of small kernels (a forward pass) whose per-task runtime cost exceeds the kernels'.
   */
  submitSequence(req: SequenceRequest): TaskHandle {
    return this.submitSequenceCharged(req, null);
  }

  /** `submitSequence`, charged to `fallback` when the request names no share group (share views). */
  submitSequenceCharged(req: SequenceRequest, fallback: ShareGroup | null): TaskHandle {
    this.assertOpen();
    return this.sequences.submit(req, fallback);
  }

  /**
   * A sequence validated once, to be submitted many times with `submitPrepared` (same tensors each
   * time: a forward pass whose buffers are kept between runs). Its tensors must stay alive.
   */
  prepareSequence(req: SequenceRequest): PreparedSequence {
    return this.prepareSequenceCharged(req, null);
  }

  /** `prepareSequence`, charged to `fallback` when the request names no share group (share views). */
  prepareSequenceCharged(req: SequenceRequest, fallback: ShareGroup | null): PreparedSequence {
    this.assertOpen();
    return this.sequences.prepare(req, fallback);
  }

  /** Runs a prepared sequence again (`tags` replace its labels for this run); no step is revalidated. */
  submitPrepared(p: PreparedSequence, tags?: Readonly<Record<string, string>>): TaskHandle {
    this.assertOpen();
    return this.sequences.submitPrepared(p, tags);
  }

  /**
   * This runtime seen through share group `share` (made on first use; `weight` replaces its weight):
   * every task submitted through the view without a share of its own is charged to that group.
   */
  withShare(share: string, weight?: number): Runtime {
    this.assertOpen();
    return shareView(this, this.shares.group(checkShareName(share), weight));
  }

  /** Device time used per share group, with tasks waiting and running (see ShareUsage). */
  shareUsage(): ShareUsage[] {
    return this.shares.usage();
  }

  /** Waits for pending writers, brings the data to host memory and returns a copy. */
  async read(t: Tensor): Promise<HostArray> {
    this.assertOpen();
    this.checkTensor(t, 'read');
    let result: HostArray | undefined;
    const task = this.tasks.host(hostReadKernel, t, () => {
      result = readHost(t, this.coherence.bufferOn(t, this.host));
    });
    await task.done;
    return result!;
  }

  /** Writes host data into a tensor after its pending readers and writers; device copies become stale. */
  async write(t: Tensor, data: ArrayLike<number> | HostArray): Promise<void> {
    this.assertOpen();
    this.checkTensor(t, 'write');
    validateHostData(t, data);
    const task = this.tasks.host(hostWriteKernel, t, () =>
      writeHost(t, this.coherence.bufferOn(t, this.host), data),
    );
    await task.done;
  }

  /**
   * A collective over one rank per device (see collectives.ts): `ranks` are device ids, a device may
   * appear more than once as `id#k` (replicas sharing a GPU or the CPU). NCCL where the backend has it
   * and every rank is its own GPU, else ordinary tasks (copies, axpy, slices); `engine` forces one.
   */
  collectives(ranks: readonly string[], options: CommunicatorOptions = {}): Communicator {
    this.assertOpen();
    return new Communicator(this, ranks, options);
  }

  /** Internal (collectives.ts): a task over several memory nodes, ordered by its tensors' accesses. */
  submitPlaced(
    name: string,
    tensors: readonly Tensor[],
    modes: readonly AccessMode[],
    work: PlacedWork,
  ): Task {
    this.assertOpen();
    tensors.forEach((t) => this.checkTensor(t, name));
    return this.tasks.placed(name, tensors, modes, work);
  }

  checkTensor(t: unknown, what: string): asserts t is Tensor {
    if (!(t instanceof Tensor) || t.owner !== this) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `${what}: expected a tensor created by this runtime`,
      );
    }
    if (t.freed) throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `${what}: ${t} has been freed`);
  }

  /** Releases a tensor's memory once the tasks already submitted on it are done. */
  free(t: Tensor): void {
    this.checkTensor(t, 'free');
    this.tensors.free(t);
  }

  registerKernel(def: KernelDef, impls: Partial<Record<DeviceKind, unknown>>): void {
    this.assertOpen();
    this.kernels.register(def, impls);
    this.deviceSet.eligibility.invalidate();
  }

  addObserver(o: Observer): void {
    this.observers.push(o);
  }

  removeObserver(o: Observer): void {
    const i = this.observers.indexOf(o);
    if (i >= 0) this.observers.splice(i, 1);
  }

  idle(): Promise<void> {
    return this.executor.idle();
  }

  get pendingTasks(): number {
    return this.executor.pendingTasks;
  }

  get stats(): {
    tasksCompleted: number;
    tasksFailed: number;
    bytesMoved: number;
    transfers: number;
    tensors: number;
  } {
    return {
      tasksCompleted: this.executor.tasksCompleted,
      tasksFailed: this.executor.tasksFailed,
      bytesMoved: this.coherence.bytesMoved,
      transfers: this.coherence.transfers,
      tensors: this.tensors.size,
    };
  }

  memoryUsage(): NodeUsage[] {
    return this.memory.usage();
  }

  /** Live tensors (for backends reporting lost memory after a device fault). */
  liveTensors(): Iterable<Tensor> {
    return this.tensors.values();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.race([this.executor.idle(), new Promise((r) => setTimeout(r, 10_000).unref())]);
    if (this.models.dirty) {
      try {
        this.saveModels();
      } catch (e) {
        this.config.log(`cannot save performance models: ${(e as Error).message}`);
      }
    }
    this.tensors.releaseAll();
    await Promise.allSettled(this.devices.map((d) => d.close()));
  }
}

export { Tensor } from '../memory/tensor.js';
export type { Scalars };
