/**
 * The WebGPU backend (Dawn through the `webgpu` package). open() never throws: whatever goes wrong —
 * bad options, no Dawn binary, no adapter, device creation refused — comes back as
 * `{ available: false, reason }` naming what was tried.
 */
import type { Backend, BackendContext, BackendStatus } from '../device.js';
import { calibrate, cachedMeasurements } from './calibrate.js';
import { discoverAdapter } from './discovery.js';
import { withNativeStderr } from './native-stderr.js';
import { isWebGpuKernel, type WebGpuKernel } from './kernel-api.js';
import { parseWebGpuOptions } from './options.js';
import { hostRoutes } from './transfers.js';
import { WebGpuDevice, requestGpuDevice } from './webgpu-device.js';

export interface WebGpuBackendSetup {
  /**
   * The f32 GEMM used to measure the device's peak (src/kernels/gemm/webgpu.ts). Passed in by the
   * runtime because devices/ sits below kernels/ (or found through ctx.kernelImpl('gemm')); without
   * it peakFlops stays empty, not guessed.
   */
  readonly calibrationGemm?: WebGpuKernel;
}

/**
 * Proposed additive member of BackendContext (the runtime owns the kernel table): this backend's
 * implementation of an op, for calibration. Read here as an optional extension until the contract has it.
 */
interface ContextWithKernels extends BackendContext {
  readonly kernelImpl?: (op: string) => unknown;
}

function unavailable(reason: string): BackendStatus {
  return { kind: 'webgpu', available: false, reason, devices: [], copies: [] };
}

export class WebGpuBackend implements Backend {
  readonly kind = 'webgpu' as const;

  constructor(private readonly setup: WebGpuBackendSetup = {}) {}

  async open(ctx: BackendContext): Promise<BackendStatus> {
    let opts;
    try {
      opts = parseWebGpuOptions(ctx.options);
    } catch (e) {
      return unavailable(e instanceof Error ? e.message : String(e));
    }
    const debug = ctx.debug ?? ((): void => {});
    // Dawn prints its start-up warnings from native code; they go to the debug log (native-stderr.ts).
    const opened = await withNativeStderr(debug, async () => {
      const found = await discoverAdapter(opts);
      if (!found.ok) return unavailable(found.reason);
      const a = found.found;
      try {
        return { a, gpu: await requestGpuDevice(a, ctx.log) };
      } catch (e) {
        return unavailable(
          `${a.backend} adapter found but requestDevice failed: ${e instanceof Error ? e.message : e}`,
        );
      }
    });
    if ('kind' in opened) return opened;
    const { a, gpu } = opened;
    const device = new WebGpuDevice('webgpu0', gpu, a, opts, ctx.log);
    // The runtime's user sees the backend's one summary line; this detail is for debugging.
    debug(
      `webgpu0: ${device.info.name} via ${a.backend} (${a.featureLevel}${a.software ? ', SOFTWARE rasterizer' : ''})`,
    );
    try {
      const fromTable = (ctx as ContextWithKernels).kernelImpl?.('gemm');
      const gemm = this.setup.calibrationGemm ?? (isWebGpuKernel(fromTable) ? fromTable : undefined);
      const m = ctx.calibrate
        ? await calibrate(ctx.cacheDir, device, gemm, opts.calibrateGemmSize)
        : await cachedMeasurements(ctx.cacheDir, device);
      if (m) device.setMeasured(m.peakF32, m.bandwidth);
    } catch (e) {
      // A failed measurement leaves the figures absent (never guessed); the device itself works.
      ctx.log(`webgpu0: calibration failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    return {
      kind: 'webgpu',
      available: true,
      devices: [device],
      copies: hostRoutes(device.id, device.staging, () => device.alive()),
    };
  }
}

/** The instance the runtime's built-in backend table loads (src/runtime/backends.ts). */
export const webgpuBackend: Backend = new WebGpuBackend();
