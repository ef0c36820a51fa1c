/**
 * One WebGPU device: a Dawn GPUDevice with every adapter limit raised to the adapter's maximum (the
 * defaults, compatibility mode's especially, are far below what kernels need), its memory node, one
 * in-order queue, staging transfers and the pipeline cache.
 */
import type { DType } from '../../core/dtype.js';
import { TandemError } from '../../core/errors.js';
import type { Device, DeviceCaps, DeviceInfo, Scalars, TensorDesc } from '../device.js';
import { adapterName, type FoundAdapter } from './discovery.js';
import { WebGpuQueue } from './exec-queue.js';
import { isWebGpuKernel, type WebGpuFeatures } from './kernel-api.js';
import { WebGpuMemoryNode } from './memory-node.js';
import type { WebGpuOptions } from './options.js';
import { PipelineCache } from './pipeline-cache.js';
import { StagingTransfers } from './transfers.js';

/** Default reported memory when no option says: WebGPU exposes no memory size, so this is a stated guess. */
const DEFAULT_MEMORY_BYTES = 8 * 2 ** 30;

export interface Flags {
  readonly GPUBufferUsage: Record<
    'MAP_READ' | 'MAP_WRITE' | 'COPY_SRC' | 'COPY_DST' | 'STORAGE' | 'UNIFORM',
    number
  >;
  readonly GPUMapMode: Record<'READ' | 'WRITE', number>;
}

export function dawnFlags(found: FoundAdapter): Flags {
  return found.dawn.globals as unknown as Flags;
}

/** Every numeric adapter limit, to request the maximum of each. */
function allLimits(adapter: GPUAdapter): Record<string, number> {
  const out: Record<string, number> = {};
  const limits = adapter.limits as unknown as Record<string, unknown>;
  for (const key in limits) {
    const v = limits[key];
    if (typeof v === 'number') out[key] = v;
  }
  return out;
}

/** The limits kernels depend on, asked for alone when a driver refuses the full set. */
const ESSENTIAL_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
];

/**
 * Every adapter limit raised to its maximum; should a driver refuse that combination, the limits the
 * kernels need, then the defaults — each refusal logged, so a smaller device is never a silent one.
 */
export async function requestGpuDevice(found: FoundAdapter, log: (msg: string) => void): Promise<GPUDevice> {
  const requiredFeatures: GPUFeatureName[] = found.adapter.features.has('shader-f16') ? ['shader-f16'] : [];
  const all = allLimits(found.adapter);
  const essential = Object.fromEntries(ESSENTIAL_LIMITS.filter((k) => k in all).map((k) => [k, all[k]!]));
  const attempts: [string, Record<string, number>][] = [
    ['all adapter limits', all],
    ['essential limits', essential],
    ['default limits', {}],
  ];
  let lastError: unknown;
  for (const [what, requiredLimits] of attempts) {
    try {
      return await found.adapter.requestDevice({ requiredLimits, requiredFeatures });
    } catch (e) {
      lastError = e;
      log(`webgpu: requestDevice with ${what} refused: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  throw lastError;
}

/**
 * dtypes the built-in kernels compute on: f32, i32, f16 (native with shader-f16, else packed in u32
 * words) and bf16 (always packed). WGSL has no f64; u8 only moves (copy, fill). Used when the caller
 * does not pass the implementation.
 */
function wgslDType(dtype: DType): boolean {
  return dtype === 'f32' || dtype === 'i32' || dtype === 'f16' || dtype === 'bf16';
}

export class WebGpuDevice implements Device {
  info: DeviceInfo;
  readonly node: WebGpuMemoryNode;
  readonly queues: readonly WebGpuQueue[];
  readonly caps: DeviceCaps = { customSource: ['wgsl'] };
  readonly features: WebGpuFeatures;
  readonly staging: StagingTransfers;
  readonly pipelines: PipelineCache;
  private failure: Error | null = null;
  private closed = false;
  /**
   * Dawn's GPU instance and adapter must outlive the device: once garbage collected, the native
   * instance is freed under the device and the process dies later in a corrupted mutex.
   */
  private readonly keepAlive: readonly [GPU, GPUAdapter];

  constructor(
    readonly id: string,
    readonly gpu: GPUDevice,
    found: FoundAdapter,
    opts: WebGpuOptions,
    log: (msg: string) => void,
  ) {
    this.keepAlive = [found.gpu, found.adapter];
    const flags = dawnFlags(found);
    const l = gpu.limits;
    this.features = {
      shaderF16: gpu.features.has('shader-f16'),
      maxWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      maxWorkgroupStorageBytes: l.maxComputeWorkgroupStorageSize,
      maxInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    };
    const memoryBytes = opts.memoryBytes ?? DEFAULT_MEMORY_BYTES;
    this.node = new WebGpuMemoryNode(
      id,
      memoryBytes,
      gpu,
      flags.GPUBufferUsage,
      opts.poolBytes,
      () => this.failure,
    );
    this.pipelines = new PipelineCache(id, gpu);
    this.staging = new StagingTransfers(
      id,
      gpu,
      { ...flags.GPUBufferUsage, ...flags.GPUMapMode },
      opts.stagingChunkBytes,
    );
    const alive = (): Error | null => this.failure;
    const uniformUsage = flags.GPUBufferUsage.UNIFORM | flags.GPUBufferUsage.COPY_DST;
    this.queues = [
      new WebGpuQueue(`${id}.q0`, opts.queueDepth, {
        device: gpu,
        pipelines: this.pipelines,
        features: this.features,
        uniformUsage,
        alive,
      }),
    ];
    const i = found.adapter.info;
    this.info = {
      id,
      kind: 'webgpu',
      name: adapterName(found.adapter),
      memoryBytes,
      peakFlops: {},
      details: {
        backend: found.backend,
        featureLevel: found.featureLevel,
        software: found.software,
        vendor: i.vendor,
        architecture: i.architecture,
        device: i.device,
        description: i.description,
        features: [...gpu.features].sort().join(' '),
        memoryBytesSource:
          opts.memoryBytes === undefined ? 'default: WebGPU does not report device memory' : 'option',
        maxBufferSize: l.maxBufferSize,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
        tried: found.attempts.join('; '),
        // Dawn's OpenGL ES backend runs the work inside queue.submit (seen on Mesa llvmpipe): the
        // event loop is blocked for a kernel's duration there. Vulkan, Metal and D3D12 submit asynchronously.
        blockingSubmit: found.backend === 'opengles',
      },
    };
    gpu.addEventListener('uncapturederror', (ev) => {
      log(`${id}: uncaptured WebGPU error: ${(ev as GPUUncapturedErrorEvent).error.message}`);
    });
    gpu.lost.then(
      (lost) => {
        if (this.failure) return;
        this.failure = new TandemError(
          'TANDEM_ERR_DEVICE_FAULT',
          `${id}: device lost (${lost.reason}): ${lost.message}`,
        );
        log(this.failure.message);
      },
      () => undefined,
    );
  }

  /** Measured figures arrive after construction (calibration needs a working device). */
  setMeasured(peakF32: number | undefined, bandwidth: number | undefined): void {
    this.info = {
      ...this.info,
      peakFlops: peakF32 === undefined ? {} : { f32: peakF32 },
      ...(bandwidth === undefined ? {} : { memoryBandwidth: bandwidth }),
    };
  }

  /** Optional 4th argument: the implementation, for the kernel's own finer check. */
  supports(op: string, args: readonly TensorDesc[], scalars: Scalars, impl?: unknown): boolean {
    if (this.failure) return false;
    if (impl !== undefined && isWebGpuKernel(impl)) return impl.supports(args, scalars, this.features);
    // Copies move bytes and fill writes a host-encoded bit pattern: any dtype.
    if (op === 'copy' || op === 'noop' || op === 'fill') return true;
    return args.every((a) => wgslDType(a.dtype));
  }

  alive(): Error | null {
    return this.failure;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.gpu.queue.onSubmittedWorkDone().catch(() => undefined);
    this.failure = new TandemError('TANDEM_ERR_CLOSED', `${this.id} closed`);
    this.staging.destroy();
    this.node.trim();
    this.gpu.destroy();
  }
}
