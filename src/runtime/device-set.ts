/**
 * The runtime's devices over their lifetime: opened from the configured backends, attached (memory
 * node, one worker per queue), and lost for good when a fault cannot be recovered (or their owner says
 * so), after which no new task is placed there and the device-lost listeners run.
 */
import { TandemError } from '../core/errors.js';
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
import type { Coherence } from '../memory/coherence.js';
import type { HostNode } from '../memory/host-node.js';
import type { MemoryManager } from '../memory/memory-manager.js';
import type { Tensor } from '../memory/tensor.js';
import { BUILTIN_BACKENDS } from './backends.js';
import type { ResolvedConfig } from './config.js';
import { KernelEligibility } from './kernel-eligibility.js';
import { kernelFlops, type KernelRegistry } from './kernel-registry.js';
import type { WorkerSlot } from './policies/policy.js';

/** A device gone for the rest of this process (see `Runtime.onDeviceLost`). */
export interface DeviceLoss {
  readonly device: string;
  readonly kind: DeviceKind;
  readonly reason: string;
  /** Epoch milliseconds. */
  readonly at: number;
}

/** What opening and losing devices needs of the runtime (structural: no import of runtime.ts). */
export interface DeviceHost {
  readonly config: ResolvedConfig;
  readonly kernels: KernelRegistry;
  readonly memory: MemoryManager;
  readonly host: HostNode;
  readonly coherence: Coherence;
  /** Tensors whose copies on a device are dropped when its memory is lost. */
  liveTensors(): Iterable<Tensor>;
}

export class DeviceSet {
  readonly devices: Device[] = [];
  readonly backends: BackendStatus[] = [];
  readonly workers: WorkerSlot[] = [];
  /** Devices lost for good, by id: no longer eligible for new tasks. */
  readonly lost = new Map<string, DeviceLoss>();
  /** Which workers may run what; cleared when a device is lost. */
  readonly eligibility = new KernelEligibility(this.workers, this.lost);
  /** Whether some device decides per call (`Device.supports`); then eligibility is per task. */
  anySupports = false;
  private readonly lostListeners = new Set<(loss: DeviceLoss) => void>();

  constructor(private readonly rt: DeviceHost) {}

  /** Opens every configured backend and attaches its devices; a backend that fails is listed unavailable. */
  async open(): Promise<void> {
    const { config, kernels, coherence } = this.rt;
    const ctxBase = {
      cacheDir: config.cacheDir,
      hostNode: this.rt.host,
      calibrate: config.calibrate,
      options: config.options,
      log: config.log,
      debug: config.debug,
      // Worker threads import the built-in kernels from here; the sim backend costs ops with kernelFlops.
      kernelTableModule: new URL('../kernels/register.js', import.meta.url).href,
      kernelFlops: (op: string, args: readonly TensorDesc[], scalars: Scalars): number =>
        kernels.has(op) ? kernelFlops(kernels.get(op).def, args, scalars) : 0,
    };
    for (const spec of config.backends) {
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
          kernels.has(op) ? kernels.get(op).impls.get(backend.kind) : undefined;
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
      for (const route of status.copies) coherence.addRoute(route);
      for (const d of status.devices) this.attach(d);
    }
  }

  private attach(d: Device): void {
    const { memory, host } = this.rt;
    if (d.node !== host && !memory.nodes.includes(d.node))
      memory.attach(d.node, this.rt.config.memoryBudget[d.node.name]);
    this.devices.push(d);
    if (d.supports) this.anySupports = true;
    // A fault that wiped the device's memory: copies that lived only there are lost (tasks reading
    // them fail with TANDEM_ERR_DATA_LOST instead of reading garbage).
    d.onMemoryLost?.((reason) => {
      this.rt.coherence.dropNode(this.rt.liveTensors(), d.node, reason);
      // A node that stays unusable after the reset means the device is gone until the process restarts.
      if (d.node.unusable) this.deviceLost(d, d.node.unusable);
    });
    for (const q of d.queues)
      this.workers.push({ index: this.workers.length, queue: q, device: d, node: d.node, inflight: 0 });
  }

  /** Adds a device-lost listener (see `Runtime.onDeviceLost`); returns its removal. */
  onDeviceLost(cb: (loss: DeviceLoss) => void): () => void {
    this.lostListeners.add(cb);
    return () => this.lostListeners.delete(cb);
  }

  /** `Runtime.declareDeviceLost`: false for an unknown device or one already lost. */
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
    this.eligibility.invalidate(); // new tasks go to the devices left (or fail with NO_DEVICE)
    this.rt.config.log(`${d.info.id} lost: ${reason}`);
    for (const cb of this.lostListeners) {
      try {
        cb(loss);
      } catch (e) {
        // A listener's bug must not break the device's fault path (its tasks still have to fail).
        this.rt.config.log(`a device-lost listener threw: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
}

/**
 * An unknown backend name fails before any backend opens: one found after the CPU backend had started
 * its worker threads used to leave them holding the process open after the error was reported.
 */
export function assertKnownBackends(backends: ResolvedConfig['backends']): void {
  for (const spec of backends)
    if (typeof spec === 'string' && !Object.hasOwn(BUILTIN_BACKENDS, spec))
      throw new TandemError(
        'TANDEM_ERR_CONFIG',
        `unknown backend ${JSON.stringify(spec)}; known: ${Object.keys(BUILTIN_BACKENDS).join(', ')}`,
      );
}
