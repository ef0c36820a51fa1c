/**
 * WebGPU backend options, read once from BackendContext.options (the runtime's `webgpu: {...}` config).
 * Only one environment variable is touched, in one place (discovery.ts): EGL_PLATFORM, which Mesa's
 * EGL reads when Dawn opens OpenGL ES; without a display it must be 'surfaceless'. The option fills it
 * in only when the environment leaves it unset. Vulkan's VK_DRIVER_FILES stays the deployment's business.
 */
import { TandemError } from '../../core/errors.js';

/** 'null' is Dawn's compile-only backend (validates WGSL, runs nothing): tests use it to compile f16 kernels. */
export const DAWN_BACKENDS = ['vulkan', 'metal', 'd3d12', 'opengles', 'null'] as const;
export type DawnBackend = (typeof DAWN_BACKENDS)[number];

export interface WebGpuOptions {
  /** Dawn backends to try, in order of preference; the first hardware adapter wins. */
  readonly backends: readonly DawnBackend[];
  /** Accept a software adapter (llvmpipe, lavapipe, SwiftShader) when no hardware one is found. */
  readonly allowSoftware: boolean;
  /** Extra Dawn instance flags, e.g. 'enable-dawn-features=allow_unsafe_apis'. */
  readonly dawnFlags: readonly string[];
  /** Device memory to report: WebGPU does not expose it; undefined → a documented default. */
  readonly memoryBytes?: number;
  /** Bytes of freed device buffers kept for reuse. */
  readonly poolBytes: number;
  /** Largest staging buffer per transfer chunk. */
  readonly stagingChunkBytes: number;
  /** Launches in flight per queue. */
  readonly queueDepth: number;
  /** EGL_PLATFORM for Dawn's OpenGL ES backend when the environment does not set one ('' = leave unset). */
  readonly eglPlatform: string;
  /** Square size of the calibration GEMM (hardware; software adapters use 256). */
  readonly calibrateGemmSize: number;
}

function defaultBackends(): DawnBackend[] {
  if (process.platform === 'darwin') return ['metal', 'opengles'];
  if (process.platform === 'win32') return ['d3d12', 'vulkan', 'opengles'];
  return ['vulkan', 'opengles'];
}

function bad(what: string, got: unknown): never {
  throw new TandemError('TANDEM_ERR_CONFIG', `webgpu.${what}: got ${JSON.stringify(got)}`, { what });
}

function positiveInt(o: Readonly<Record<string, unknown>>, key: string, dflt: number): number {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) bad(`${key} must be a positive integer`, v);
  return v;
}

export function parseWebGpuOptions(raw: Readonly<Record<string, unknown>>): WebGpuOptions {
  // The runtime passes every backend's options keyed by kind: { cpu: {...}, webgpu: {...} }.
  const o = (typeof raw.webgpu === 'object' && raw.webgpu !== null ? raw.webgpu : {}) as Readonly<
    Record<string, unknown>
  >;
  let backends = defaultBackends();
  if (o.backends !== undefined) {
    const list = typeof o.backends === 'string' ? o.backends.split(',') : o.backends;
    if (!Array.isArray(list) || list.length === 0) bad('backends must be a non-empty list', o.backends);
    backends = list.map((b) => {
      if (!(DAWN_BACKENDS as readonly unknown[]).includes(b))
        bad(`backends: one of ${DAWN_BACKENDS.join(', ')}`, b);
      return b as DawnBackend;
    });
  }
  const flags = o.dawnFlags ?? [];
  if (!Array.isArray(flags) || !flags.every((f) => typeof f === 'string'))
    bad('dawnFlags must be strings', flags);
  if (o.allowSoftware !== undefined && typeof o.allowSoftware !== 'boolean')
    bad('allowSoftware', o.allowSoftware);
  const memoryBytes = o.memoryBytes === undefined ? undefined : positiveInt(o, 'memoryBytes', 1);
  if (o.eglPlatform !== undefined && typeof o.eglPlatform !== 'string') bad('eglPlatform', o.eglPlatform);
  return {
    backends,
    eglPlatform: o.eglPlatform ?? 'surfaceless',
    allowSoftware: o.allowSoftware ?? true,
    dawnFlags: flags as string[],
    ...(memoryBytes === undefined ? {} : { memoryBytes }),
    poolBytes: positiveInt(o, 'poolBytes', 1 << 30),
    stagingChunkBytes: positiveInt(o, 'stagingChunkBytes', 64 << 20),
    queueDepth: positiveInt(o, 'queueDepth', 8),
    calibrateGemmSize: positiveInt(o, 'calibrateGemmSize', 4096),
  };
}
