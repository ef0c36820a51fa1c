/**
 * The Runtime owns everything it uses: devices (through their backends), memory nodes, the kernel
 * registry, the scheduler policy and observers. Tests build as many isolated runtimes as they like.
 */
import { freshPagesForLargeBuffers } from '../devices/host-pages.js';
import type { DType, HostArray } from '../core/dtype.js';
import { assertDType } from '../core/dtype.js';
import { TandemError } from '../core/errors.js';
import { assertShape } from '../core/shape.js';
import {
  HARDWARE_KINDS,
  isHardwareKind,
  type Backend,
  type BackendStatus,
  type Device,
  type DeviceKind,
  type Scalars,
  type TensorDesc,
} from '../devices/device.js';
import type { AccessMode, KernelDef } from '../kernels/kernel.js';
import { argMode } from '../kernels/kernel.js';
import { KERNEL_DEFS, KERNEL_IMPLS } from '../kernels/register.js';
import { Coherence } from '../memory/coherence.js';
import { HostNode } from '../memory/host-node.js';
import { MemoryManager, type NodeUsage } from '../memory/memory-manager.js';
import { Tensor } from '../memory/tensor.js';
import type { Observer } from '../obs/observer.js';
import { BUILTIN_BACKENDS } from './backends.js';
import type { ResolvedConfig, RuntimeConfig } from './config.js';
import { resolveConfig } from './config.js';
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
import { KernelRegistry, kernelFlops, type RegisteredKernel } from './kernel-registry.js';
import { createPolicy } from './policies/index.js';
import type { SchedulerPolicy, WorkerSlot } from './policies/policy.js';
import type { PlacedWork, TaskHandle, TaskKernel } from './task.js';
import { Communicator, placedKernel, type CommunicatorOptions } from './collectives.js';
import { DISTINCT_TENSORS, PREPARED_RUN, Task, unfinished } from './task.js';
import { validateSubmit, type SubmitRequest } from './submit.js';
import {
  PreparedSequence,
  SEQUENCE_REQUEST_DEF,
  buildSequence,
  requestFields,
  sequenceEligible,
  type SequenceHost,
  type SequenceRequest,
} from './sequence.js';
import { BusModel, calibrateBus } from './bus-model.js';
import { LruEvictor } from '../memory/evictor.js';
import { PerfModels } from './perf-model.js';
import { loadModels, modelFile, saveModels } from './perf-model-store.js';
import { submitGraph, type GraphNode } from './submit-graph.js';
import { firstOccurrences } from './graph.js';
import { TaskModels, deviceKey } from './task-models.js';
import { ShareTable, checkShareName, type ShareGroup, type ShareUsage } from './shares.js';
import { shareView } from './share-view.js';

export type { SubmitRequest } from './submit.js';
export type { GraphNode } from './submit-graph.js';

/** A device gone for the rest of this process (see `Runtime.onDeviceLost`). */
export interface DeviceLoss {
  readonly device: string;
  readonly kind: DeviceKind;
  readonly reason: string;
  /** Epoch milliseconds. */
  readonly at: number;
}

/** Eligible workers of one kernel per device constraint, valid while it has `implCount` impls. */
interface EligibleEntry {
  implCount: number;
  readonly byConstraint: Map<string | null, readonly number[]>;
}

const NO_MODES: readonly AccessMode[] = Object.freeze([]);
const NO_SCALARS: Scalars = Object.freeze({});

export class Runtime {
  readonly config: ResolvedConfig;
  readonly kernels: KernelRegistry;
  readonly memory = new MemoryManager();
  readonly host = new HostNode();
  readonly coherence: Coherence;
  readonly observers: Observer[] = [];
  readonly devices: Device[] = [];
  readonly backends: BackendStatus[] = [];
  readonly workers: WorkerSlot[] = [];
  readonly policy: SchedulerPolicy;
  /** Performance models per (kernel, footprint, device), persisted under cacheDir. */
  readonly models = new PerfModels();
  /** Bandwidth and latency per pair of memory nodes. */
  readonly bus = new BusModel();
  readonly evictor: LruEvictor;
  /** Share groups (fair sharing of devices between tenants or jobs; see shares.ts). */
  readonly shares = new ShareTable();
  private executor!: Executor;
  private readonly tensors = new Map<number, Tensor>();
  private nextTensorId = 1;
  private nextTaskId = 1;
  private closed = false;
  /** Eligible workers per kernel when no device filters by arguments (see eligibleFor). */
  private readonly eligibleByKernel = new Map<RegisteredKernel, EligibleEntry>();
  /** Whether some device decides per call (`Device.supports`); then eligibility is per task. */
  private anySupports = false;
  /** Devices lost for good, by id: no longer eligible for new tasks. */
  private readonly lost = new Map<string, DeviceLoss>();
  private readonly lostListeners = new Set<(loss: DeviceLoss) => void>();
  /** Access modes of kernels whose modes do not depend on scalars, shared by their tasks. */
  private readonly staticModes = new WeakMap<KernelDef, readonly AccessMode[]>();

  private constructor(config: ResolvedConfig) {
    this.config = config;
    this.kernels = new KernelRegistry(KERNEL_DEFS, KERNEL_IMPLS);
    this.kernels.define(hostReadDef);
    this.kernels.define(hostWriteDef);
    this.memory.attach(this.host, config.memoryBudget['host']);
    this.coherence = new Coherence(this.memory, this.host);
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
  }

  static async create(config?: RuntimeConfig): Promise<Runtime> {
    // Big host tensors from fresh pages, never zero-filled on this thread (see host-pages.ts).
    freshPagesForLargeBuffers();
    const resolved = resolveConfig(config);
    assertKnownBackends(resolved.backends);
    const rt = new Runtime(resolved);
    try {
      await rt.openBackends();
      await rt.openModels();
    } catch (e) {
      // Devices opened before the failure (the CPU backend's worker threads, a GPU context) would
      // otherwise hold the process open after the caller has reported the error.
      await Promise.allSettled(rt.devices.map((d) => d.close()));
      throw e;
    }
    const models = new TaskModels(rt.models, rt.bus, rt.coherence, rt.workers);
    models.bindWorkers();
    rt.executor = new Executor(rt.workers, rt.policy, rt.coherence, rt.observers, models);
    rt.executor.memoryGate = (task, w) => rt.memoryGate(task, w);
    rt.evictor.onWriteback = () => rt.executor.retryDeferred();
    return rt;
  }

  private async openBackends(): Promise<void> {
    const ctxBase = {
      cacheDir: this.config.cacheDir,
      hostNode: this.host,
      calibrate: this.config.calibrate,
      options: this.config.options,
      log: this.config.log,
      debug: this.config.debug,
      // Worker threads import the built-in kernels from here; the sim backend costs ops with kernelFlops.
      kernelTableModule: new URL('../kernels/register.js', import.meta.url).href,
      kernelFlops: (op: string, args: readonly TensorDesc[], scalars: Scalars): number =>
        this.kernels.has(op) ? kernelFlops(this.kernels.get(op).def, args, scalars) : 0,
    };
    for (const spec of this.config.backends) {
      let backend: Backend;
      const kind = typeof spec === 'string' ? spec : spec.kind;
      try {
        if (typeof spec === 'string') {
          if (!isHardwareKind(spec))
            throw new TandemError(
              'TANDEM_ERR_CONFIG',
              `unknown backend ${JSON.stringify(spec)} (built-in: ${HARDWARE_KINDS.join(', ')})`,
            );
          backend = await BUILTIN_BACKENDS[spec]();
        } else backend = spec;
      } catch (e) {
        if (e instanceof TandemError && e.code === 'TANDEM_ERR_CONFIG') throw e;
        this.backends.push({
          kind: kind as DeviceKind,
          available: false,
          reason: `backend failed to load: ${(e as Error).message}`,
          devices: [],
          copies: [],
        });
        continue;
      }
      let status: BackendStatus;
      try {
        // Calibration runs the backend's own kernels from this runtime's table.
        const kernelImpl = (op: string): unknown =>
          this.kernels.has(op) ? this.kernels.get(op).impls.get(backend.kind) : undefined;
        status = await backend.open({ ...ctxBase, kernelImpl });
      } catch (e) {
        status = {
          kind: backend.kind,
          available: false,
          reason: `open failed: ${(e as Error).message}`,
          devices: [],
          copies: [],
        };
      }
      this.backends.push(status);
      for (const route of status.copies) this.coherence.addRoute(route);
      for (const d of status.devices) this.attachDevice(d);
    }
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

  /**
   * Room for a task's data on its worker's node: evict (clean copies now, dirty ones written back)
   * and, when write-backs or tasks on that node will free more, make it wait rather than fail.
   */
  private memoryGate(task: Task, w: WorkerSlot): 'ok' | 'wait' {
    const node = w.node;
    let need = 0;
    const firsts = task.flags & DISTINCT_TENSORS ? null : firstOccurrences(task.tensors);
    for (let i = 0; i < task.tensors.length; i++) {
      const t = task.tensors[i]!;
      const first =
        task.flags & DISTINCT_TENSORS || (firsts === null ? task.tensors.indexOf(t) === i : firsts.first[i]);
      if (first && !t.replicas[node.index]?.buffer) need += t.bytes;
    }
    if (need === 0) return 'ok';
    const room = (): number => this.memory.budgetBytes(node) - this.memory.usedBytes(node);
    if (need <= room()) return 'ok';
    this.evictor.evict(node, need - room());
    if (need <= room()) return 'ok';
    const busy = this.workers.some((x) => x.node === node && x.inflight > 0);
    return this.evictor.inFlight > 0 || busy ? 'wait' : 'ok';
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

  private attachDevice(d: Device): void {
    if (d.node !== this.host && !this.memory.nodes.includes(d.node))
      this.memory.attach(d.node, this.config.memoryBudget[d.node.name]);
    this.devices.push(d);
    if (d.supports) this.anySupports = true;
    // A fault that wiped the device's memory: copies that lived only there are lost (tasks reading
    // them fail with TANDEM_ERR_DATA_LOST instead of reading garbage).
    d.onMemoryLost?.((reason) => {
      this.coherence.dropNode(this.tensors.values(), d.node, reason);
      // A node that stays unusable after the reset means the device is gone until the process restarts.
      if (d.node.unusable) this.deviceLost(d, d.node.unusable);
    });
    for (const q of d.queues)
      this.workers.push({ index: this.workers.length, queue: q, device: d, node: d.node, inflight: 0 });
  }

  /**
   * `cb` runs once for each device lost for the rest of this process (it faulted and could not be
   * recovered: a sticky CUDA error). It runs synchronously inside the device's fault path, before the
   * tasks in flight there are failed, so an observer added here sees those failures. Returns a function
   * that removes the listener.
   */
  onDeviceLost(cb: (loss: DeviceLoss) => void): () => void {
    this.lostListeners.add(cb);
    return () => this.lostListeners.delete(cb);
  }

  /** The devices lost so far (see onDeviceLost); they stay in `devices` but take no new tasks. */
  get lostDevices(): readonly DeviceLoss[] {
    return [...this.lost.values()];
  }

  /**
   * Gives a device up for the rest of this process on the word of its owner: a watchdog saw a kernel run
   * far past its job's deadline, and a CUDA kernel cannot be stopped in-process (only the end of the
   * process tears its context down). The effects are a sticky fault's: no new task is placed there and
   * the onDeviceLost listeners run; tasks in flight there are left as they are (they may never end).
   * Returns false for an unknown device or one already lost.
   */
  declareDeviceLost(deviceId: string, reason: string): boolean {
    const d = this.devices.find((x) => x.info.id === deviceId);
    if (!d || this.lost.has(deviceId)) return false;
    this.deviceLost(d, reason);
    return true;
  }

  private deviceLost(d: Device, reason: string): void {
    if (this.lost.has(d.info.id)) return;
    const loss: DeviceLoss = { device: d.info.id, kind: d.info.kind, reason, at: Date.now() };
    this.lost.set(d.info.id, loss);
    this.eligibleByKernel.clear(); // new tasks go to the devices left (or fail with NO_DEVICE)
    this.config.log(`${d.info.id} lost: ${reason}`);
    for (const cb of this.lostListeners) {
      try {
        cb(loss);
      } catch (e) {
        // A listener's bug must not break the device's fault path (its tasks still have to fail).
        this.config.log(`a device-lost listener threw: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', 'the runtime has been closed');
  }

  /** Creates a tensor; without data it reads as zeros until written. */
  tensor(shape: readonly number[], dtype: DType = 'f32', data?: ArrayLike<number> | HostArray): Tensor {
    this.assertOpen();
    const s = assertShape(shape);
    const dt = assertDType(dtype);
    const t = new Tensor(this.nextTensorId++, s, dt, this);
    if (data !== undefined) {
      validateHostData(t, data);
      const buf = this.coherence.acquireWrite(t, this.host);
      writeHost(t, buf, data);
      this.coherence.commitWrite(t, this.host);
    }
    this.tensors.set(t.id, t);
    return t;
  }

  submit(req: SubmitRequest): TaskHandle {
    return this.submitCharged(req, null);
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
    const task = new Task(
      this.nextTaskId++,
      req.name ?? k.def.name,
      k,
      v.tensors,
      this.modesOf(k.def, v.scalars),
      v.scalars,
      v.priority,
      v.constraint,
      req.tags,
      share,
    );
    task.cost = v.cost;
    task.eligible = this.anySupports ? this.eligibleFor(task, k.impls) : this.eligibleOf(k, v.constraint);
    this.executor.submit(task, v.deps);
    return task;
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
    const { prepared, deps } = this.validateSequence(req, fallback, true);
    return this.startSequence(prepared, prepared.tags, deps, false);
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
    if (req?.deps !== undefined)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'prepareSequence: deps belong to a submission, not to a prepared sequence',
      );
    return this.validateSequence(req, fallback, false).prepared;
  }

  /** Runs a prepared sequence again (`tags` replace its labels for this run); no step is revalidated. */
  submitPrepared(p: PreparedSequence, tags?: Readonly<Record<string, string>>): TaskHandle {
    this.assertOpen();
    if (!(p instanceof PreparedSequence) || p.owner !== this)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        'submitPrepared: not a sequence prepared by this runtime',
      );
    for (const t of p.built.tensors) this.checkTensor(t, `submitPrepared(${p.name})`);
    return this.startSequence(p, tags ?? p.tags, [], true);
  }

  /** Every step and the request-level fields validated: what a submission or a preparation starts from. */
  private validateSequence(
    req: SequenceRequest,
    fallback: ShareGroup | null,
    withDeps: boolean,
  ): { prepared: PreparedSequence; deps: readonly Task[] } {
    this.assertOpen();
    const seq = buildSequence(this.sequenceHost, req);
    const v = validateSubmit(this, SEQUENCE_REQUEST_DEF, requestFields(req, withDeps));
    const share = req.share === undefined ? fallback : this.shares.resolve(req.share);
    const name = req.name ?? `sequence of ${req.steps.length}`;
    const prepared = new PreparedSequence(this, seq, name, v.priority, v.constraint, req.tags, share);
    return { prepared, deps: v.deps };
  }

  /** `prepared` (a request just validated, or a prepared sequence run again) as a task. */
  private startSequence(
    p: PreparedSequence,
    tags: Readonly<Record<string, string>> | undefined,
    deps: readonly Task[],
    preparedRun: boolean,
  ): Task {
    const seq = p.built;
    const id = this.nextTaskId++;
    // The steps' own launch ids follow the task's (see Executor.launchSequence).
    this.nextTaskId += seq.calls.length;
    const task = new Task(
      id,
      p.name,
      seq.kernel,
      seq.tensors,
      seq.modes,
      NO_SCALARS,
      p.priority,
      p.constraint,
      tags,
      p.share,
    );
    task.cost = seq.cost;
    task.flags |= preparedRun ? DISTINCT_TENSORS | PREPARED_RUN : DISTINCT_TENSORS;
    task.eligible = sequenceEligible(seq, p.constraint, this.workers, this.lost);
    this.executor.submit(task, deps);
    return task;
  }

  private readonly sequenceHost: SequenceHost = {
    kernels: { get: (op) => this.kernels.get(op) },
    devices: this.devices,
    checkTensor: (t: unknown, what: string): asserts t is Tensor => this.checkTensor(t, what),
    modesOf: (def, scalars) => this.modesOf(def, scalars),
  };

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

  private modesOf(def: KernelDef, scalars: Scalars): readonly AccessMode[] {
    if (def.args.length === 0) return NO_MODES;
    if (def.modes) return def.args.map((_, i) => argMode(def, i, scalars));
    let m = this.staticModes.get(def);
    if (!m) this.staticModes.set(def, (m = Object.freeze(def.args.map((a) => a.mode))));
    return m;
  }

  /** Eligibility when no device filters by arguments: by kernel and constraint only, kept per kernel. */
  private eligibleOf(k: RegisteredKernel, constraint: string | null): readonly number[] {
    let e = this.eligibleByKernel.get(k);
    if (!e || e.implCount !== k.impls.size) {
      // An implementation added since (kernels.implement): start over for this kernel.
      e = { implCount: k.impls.size, byConstraint: new Map() };
      this.eligibleByKernel.set(k, e);
    }
    let out = e.byConstraint.get(constraint);
    if (!out) {
      const list: number[] = [];
      for (const w of this.workers) {
        const info = w.device.info;
        if (!k.impls.has(info.kind) || this.lost.has(info.id)) continue;
        if (constraint && constraint !== info.kind && constraint !== info.id) continue;
        list.push(w.index);
      }
      e.byConstraint.set(constraint, (out = list));
    }
    return out;
  }

  /** Eligibility per task: some device decides by the call's arguments (`Device.supports`). */
  private eligibleFor(task: Task, impls: ReadonlyMap<string, unknown>): readonly number[] {
    const descs = task.tensors.map((t) => t.desc);
    const out: number[] = [];
    for (const w of this.workers) {
      const info = w.device.info;
      if (!impls.has(info.kind) || this.lost.has(info.id)) continue;
      if (task.constraint && task.constraint !== info.kind && task.constraint !== info.id) continue;
      if (w.device.supports && !w.device.supports(task.op, descs, task.scalars, impls.get(info.kind)))
        continue;
      out.push(w.index);
    }
    return out;
  }

  /** Waits for pending writers, brings the data to host memory and returns a copy. */
  async read(t: Tensor): Promise<HostArray> {
    this.assertOpen();
    this.checkTensor(t, 'read');
    let result: HostArray | undefined;
    const task = this.hostTask(hostReadKernel, t, () => {
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
    const task = this.hostTask(hostWriteKernel, t, () =>
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
    const task = new Task(
      this.nextTaskId++,
      name,
      placedKernel,
      tensors,
      modes,
      NO_SCALARS,
      0,
      null,
      undefined,
    );
    task.placed = work;
    this.executor.submit(task, []);
    return task;
  }

  private hostTask(kernel: TaskKernel, t: Tensor, fn: (task: Task) => void): Task {
    const def = kernel.def;
    const task = new Task(
      this.nextTaskId++,
      def.name,
      kernel,
      [t],
      this.modesOf(def, NO_SCALARS),
      NO_SCALARS,
      0,
      null,
      undefined,
    );
    task.hostFn = fn;
    this.executor.submit(task, []);
    return task;
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
    t.freed = true;
    // The common case (nothing left on it) builds no list and no closure: this runs once per tensor.
    if (!unfinished(t.lastWriter) && !t.readers.some(unfinished)) {
      this.coherence.release(t);
      this.tensors.delete(t.id);
      return;
    }
    const pending = [t.lastWriter, ...t.readers].filter(
      (x): x is Task => x instanceof Task && !x.isFinished(),
    );
    const release = (): void => {
      this.coherence.release(t);
      this.tensors.delete(t.id);
    };
    void Promise.allSettled(pending.map((p) => p.done)).then(release);
  }

  registerKernel(def: KernelDef, impls: Partial<Record<DeviceKind, unknown>>): void {
    this.assertOpen();
    if (!impls || Object.keys(impls).length === 0) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `kernel ${def?.name}: give at least one implementation`,
      );
    }
    this.kernels.define(def);
    for (const [kind, impl] of Object.entries(impls))
      if (impl !== undefined) this.kernels.implement(def.name, kind as DeviceKind, impl);
    this.eligibleByKernel.clear();
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
    for (const t of this.tensors.values()) this.coherence.release(t);
    this.tensors.clear();
    await Promise.allSettled(this.devices.map((d) => d.close()));
  }
}

/**
 * An unknown backend name fails before any backend opens: one found after the CPU backend had started
 * its worker threads used to leave them holding the process open after the error was reported.
 */
function assertKnownBackends(backends: ResolvedConfig['backends']): void {
  for (const spec of backends)
    if (typeof spec === 'string' && !Object.hasOwn(BUILTIN_BACKENDS, spec))
      throw new TandemError(
        'TANDEM_ERR_CONFIG',
        `unknown backend ${JSON.stringify(spec)}; known: ${Object.keys(BUILTIN_BACKENDS).join(', ')}`,
      );
}

export { Tensor } from '../memory/tensor.js';
export type { Scalars };
