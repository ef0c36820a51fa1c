/**
 * The hardware-layer contracts. A backend (cpu/, cuda/, webgpu/, sim/) opens devices; a device owns a
 * memory node and one or more in-order execution queues. Validation, byte accounting, pooling policy
 * and out-of-memory messages live above the backends (src/memory); the backend only moves bytes and
 * runs kernels.
 */
import type { DType } from '../core/dtype.js';
import type { Shape } from '../core/shape.js';

/**
 * The one list of device kinds: the built-in hardware backends, in the order they are tried, and
 * `sim` (simulated devices for scheduling studies). Every other list of kinds derives from these.
 */
export const HARDWARE_KINDS = ['cpu', 'cuda', 'webgpu'] as const;
export type HardwareKind = (typeof HARDWARE_KINDS)[number];
export const DEVICE_KINDS = [...HARDWARE_KINDS, 'sim'] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];

export function isHardwareKind(x: unknown): x is HardwareKind {
  return (HARDWARE_KINDS as readonly unknown[]).includes(x);
}
export type MemoryKind = 'host' | 'cuda' | 'webgpu' | 'sim';

/** Measured figures; a field is absent when it was not measured, never guessed. */
export interface DeviceInfo {
  readonly id: string;
  readonly kind: DeviceKind;
  readonly name: string;
  readonly memoryBytes: number;
  /** Peak rate per dtype in FLOP/s from a calibration GEMM ('tf32' for f32 on tensor cores). */
  readonly peakFlops: Readonly<Partial<Record<DType | 'tf32', number>>>;
  /** Device memory bandwidth in bytes/s (streaming kernel). */
  readonly memoryBandwidth?: number;
  readonly details: Readonly<Record<string, string | number | boolean>>;
}

export interface DeviceBuffer {
  readonly node: MemoryNode;
  readonly bytes: number;
}

/** Host memory: shared between worker threads, so CPU kernels never copy tensors. */
export interface HostBuffer extends DeviceBuffer {
  readonly sab: SharedArrayBuffer;
  /** Unique per host node: lets worker threads keep one reference per buffer. */
  readonly id: number;
}

export interface MemoryNode {
  /** Index in the runtime's node table, assigned when the node is attached. */
  index: number;
  readonly kind: MemoryKind;
  readonly name: string;
  readonly capacityBytes: number;
  /** Allocate raw bytes; throw on failure (the memory manager turns that into TANDEM_ERR_OUT_OF_MEMORY). */
  alloc(bytes: number): DeviceBuffer;
  free(buf: DeviceBuffer): void;
  /** Bytes this node holds in caches it could release on pressure (optional). */
  trim?(): number;
  /**
   * Set (to why) once the node's device is gone for the rest of the process — e.g. a sticky CUDA fault
   * after which the driver refuses new contexts. Read by the runtime when `onMemoryLost` fires, to
   * tell a device that recovered from one that needs a process restart.
   */
  readonly unusable?: string | null;
}

export type Done = (err: Error | null) => void;

/** One direction of the copy table; the runtime picks routes by (from.kind, to.kind). */
export interface CopyRoute {
  readonly from: MemoryKind;
  readonly to: MemoryKind;
  /** Engine name for traces ("cuda0.h2d"). */
  engine(src: DeviceBuffer, dst: DeviceBuffer): string;
  copy(src: DeviceBuffer, dst: DeviceBuffer, bytes: number, done: Done): void;
}

export interface TensorDesc {
  readonly shape: Shape;
  readonly dtype: DType;
  readonly bytes: number;
}

export type ScalarValue = number | boolean | string;
export type Scalars = Readonly<Record<string, ScalarValue>>;

export interface LaunchArg {
  readonly buffer: DeviceBuffer;
  readonly desc: TensorDesc;
}

export interface LaunchRequest {
  readonly taskId: number;
  readonly op: string;
  /** The backend-specific implementation found in the kernel table for this device kind. */
  readonly impl: unknown;
  readonly args: readonly LaunchArg[];
  readonly scalars: Scalars;
  /**
   * Tasks already in this queue that must succeed before this one runs (chain forwarding). Valid
   * only during the `launch` call: a queue that keeps it must copy it.
   */
  readonly after: readonly number[];
}

/** Optional timings a queue can report (device clocks); otherwise the host-observed times are used. */
export interface LaunchTiming {
  readonly startUs: number;
  readonly endUs: number;
}

/** One step of a prepared sequence, as `ExecQueue.replay` receives it. */
export interface ReplayStep {
  readonly op: string;
  readonly impl: unknown;
  readonly args: readonly LaunchArg[];
  readonly scalars: Scalars;
}

/** A run of a prepared sequence (Runtime.submitPrepared) offered to a queue as one unit. */
export interface ReplayRequest {
  /** The same object on every run of one prepared sequence (and only of it). */
  readonly key: object;
  readonly taskId: number;
  /** The launch id of the last step (what a step-by-step launch would have used for it). */
  readonly lastStepId: number;
  readonly steps: readonly ReplayStep[];
  /** As LaunchRequest.after, for the first step. */
  readonly after: readonly number[];
}

/** An in-order execution queue: a CPU worker thread, a CUDA compute stream, a WebGPU queue. */
export interface ExecQueue {
  readonly id: string;
  /** How many launches may be outstanding at once. */
  readonly depth: number;
  launch(req: LaunchRequest, done: (err: Error | null, timing?: LaunchTiming) => void): void;
  /**
   * Optional: runs a prepared sequence's steps as one recorded unit (a CUDA graph replayed with one
   * call). Returns false to decline — the first run of a sequence, steps that cannot be recorded —
   * and the runtime then launches the steps one by one; when it returns true, `done` runs once.
   */
  replay?(req: ReplayRequest, done: (err: Error | null) => void): boolean;
}

export interface DeviceCaps {
  readonly peerCopy?: boolean;
  readonly customSource?: readonly ('cuda' | 'wgsl' | 'cpu-module')[];
}

export interface Device {
  readonly info: DeviceInfo;
  readonly node: MemoryNode;
  readonly queues: readonly ExecQueue[];
  readonly caps: DeviceCaps;
  /** Optional finer check than "has an implementation of op" (e.g. WebGPU has no f64). */
  supports?(op: string, args: readonly TensorDesc[], scalars: Scalars, impl?: unknown): boolean;
  /**
   * Optional: ops this device's kind implements that this device cannot run (potrf on a CUDA device
   * whose libcusolver was not found). Never placed here: such a task goes to another device, or is
   * refused as having none, instead of failing here. Unlike `supports` it does not depend on the call,
   * so eligibility stays cached per kernel; fixed when the device opens.
   */
  readonly unavailableOps?: ReadonlySet<string>;
  /**
   * Optional: `listener` runs when the device lost all its memory (a fault reset the GPU context),
   * before the tasks in flight are failed; the runtime drops replicas on `node` (coherence.dropNode).
   */
  onMemoryLost?(listener: (reason: string) => void): void;
  close(): Promise<void>;
}

export interface BackendContext {
  /** Directory for caches (calibration figures, compiled programs). */
  readonly cacheDir: string;
  /** The host memory node, for backends whose devices compute on host memory. */
  readonly hostNode: MemoryNode;
  /** Skip slow calibration and report figures from the cache only (tests). */
  readonly calibrate: boolean;
  readonly options: Readonly<Record<string, unknown>>;
  readonly log: (msg: string) => void;
  /**
   * Detail nobody needs unless debugging: drivers' and Dawn's own start-up warnings, per-device
   * notes. Optional; shown by the CLI and the service with TANDEM_LOG=debug.
   */
  readonly debug?: (msg: string) => void;
  /** This runtime's implementation of `op` for the backend's kind (for calibration runs). */
  readonly kernelImpl?: (op: string) => unknown;
  /**
   * URL of the module whose `KERNEL_IMPLS` export is the built-in kernel table ({op, backend, impl}),
   * for backends that run kernels in worker threads and must import them there. Devices sit below
   * the kernel library and never import it themselves; the runtime hands them this.
   */
  readonly kernelTableModule?: string;
  /** FLOPs of one run of `op` on these arguments, from the kernel's cost model (0 when unknown). */
  readonly kernelFlops?: (op: string, args: readonly TensorDesc[], scalars: Scalars) => number;
}

export interface BackendStatus {
  readonly kind: DeviceKind;
  readonly available: boolean;
  /** Why the backend is unavailable, including what it tried. */
  readonly reason?: string;
  readonly devices: readonly Device[];
  readonly copies: readonly CopyRoute[];
  /**
   * Optional: a communicator over some of this backend's devices (one rank each, in the order given),
   * e.g. NCCL. Throws a TandemError (TANDEM_ERR_UNSUPPORTED when the library is missing); the runtime
   * then uses its portable collectives made of ordinary tasks.
   */
  readonly collectives?: (devices: readonly Device[]) => CollectiveGroup;
}

export type CollectiveOp = 'allReduce' | 'reduceScatter' | 'allGather' | 'broadcast';
export type ReduceOp = 'sum' | 'avg';

/** One collective over every rank of a group: per rank a send and a receive buffer (may be the same). */
export interface CollectiveCall {
  readonly op: CollectiveOp;
  /** allReduce and reduceScatter only. */
  readonly reduce: ReduceOp;
  /** broadcast only: the rank whose data everyone receives. */
  readonly root: number;
  readonly dtype: DType;
  /**
   * Elements per rank: of the tensor (allReduce, broadcast), of each output (reduceScatter: the input
   * holds ranks × count), of each input (allGather: the output holds ranks × count).
   */
  readonly count: number;
  readonly send: readonly DeviceBuffer[];
  readonly recv: readonly DeviceBuffer[];
}

/**
 * A communicator: runs collectives on streams of its own (one per device), ordered after the work
 * already queued on each device's compute queue; `done` runs when every rank's part has finished.
 */
export interface CollectiveGroup {
  /** Library and version for logs and traces ("nccl 2.27.3"). */
  readonly engine: string;
  readonly devices: readonly Device[];
  /** Trace queue names, one per rank ("cuda0.comm"). */
  readonly queueIds: readonly string[];
  /** Runs the calls as one group (NCCL fuses them: a bucket of gradients is one launch per rank). */
  run(calls: readonly CollectiveCall[], done: Done): void;
  close(): void;
}

export interface Backend {
  readonly kind: DeviceKind;
  open(ctx: BackendContext): Promise<BackendStatus>;
}
