/**
 * Where each kernel of an ONNX run goes when the run is placed on a device (RunOptions.device): there,
 * when that device can run the kernel on these arguments; otherwise on the fallback device (the CPU by
 * default), as ONNX Runtime runs an execution provider's unsupported nodes on its CPU provider. A
 * WebGPU run of a graph with a node WGSL does not cover (Where, TopK, a scatter) or a dtype WebGPU
 * declines still answers: the runtime moves the tensors between the devices. `fallback: null` keeps
 * the run strict: such a kernel is TANDEM_ERR_UNSUPPORTED, naming the node, before it is submitted.
 */
import { TandemError } from '../core/errors.js';
import type { Scalars } from '../devices/device.js';
import type { Tensor } from '../memory/tensor.js';
import type { Runtime } from '../runtime/runtime.js';

export type PlacementRuntime = Pick<Runtime, 'canRun'>;

export class KernelPlacement {
  /** Nodes (op:name) some of whose kernels ran on a fallback device in this run. */
  readonly fellBack = new Set<string>();
  private readonly fallbacks: readonly string[];

  constructor(
    private readonly rt: PlacementRuntime,
    /** The run's device; undefined: the scheduler places every kernel. */
    private readonly device: string | undefined,
    /** Where kernels the device cannot run go, the first that can; null or []: none (strict). */
    fallback: string | readonly string[] | null,
  ) {
    this.fallbacks = fallback === null ? [] : typeof fallback === 'string' ? [fallback] : fallback;
  }

  /** rt.submit's `device` for this kernel of node `node`. */
  deviceFor(
    kernel: string,
    args: Readonly<Record<string, Tensor>>,
    scalars: Scalars,
    node: string,
  ): string | undefined {
    const device = this.device;
    if (device === undefined || this.rt.canRun(kernel, args, scalars, device)) return device;
    const to = this.fallbacks.find((f) => f !== device && this.rt.canRun(kernel, args, scalars, f));
    if (to === undefined) {
      const dtypes = [...new Set(Object.values(args).map((t) => t.dtype))].join(', ');
      const tried = this.fallbacks.filter((f) => f !== device);
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: node ${node} needs kernel ${kernel} on ${dtypes}, which ${device} cannot run` +
          (tried.length === 0
            ? ' (no fallback device)'
            : ` and neither can the fallback ${tried.join(' or ')}`),
        { node, kernel, device, ...(tried.length === 0 ? {} : { fallback: tried }) },
      );
    }
    this.fellBack.add(node);
    return to;
  }
}
