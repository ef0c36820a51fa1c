/**
 * What a WebGPU kernel is: data, not GPU objects. A kernel file (src/kernels/<op>/webgpu.ts) turns the
 * launch's tensor descriptions and scalars into a list of steps — WGSL dispatches and buffer copies —
 * and the queue (exec-queue.ts) compiles, caches and runs them. Keeping programs as data keeps the
 * compile-cache key (source, entry, constants) apart from per-run arguments (bindings, uniforms), and
 * lets kernel files import nothing but types from here.
 */
import type { Scalars, TensorDesc } from '../device.js';

/** What a kernel may depend on when it plans: adapter features and the limits that shape a dispatch. */
export interface WebGpuFeatures {
  /** The adapter has `shader-f16` and the device enabled it: WGSL may `enable f16;`. */
  readonly shaderF16: boolean;
  readonly maxWorkgroupsPerDimension: number;
  readonly maxWorkgroupStorageBytes: number;
  readonly maxInvocationsPerWorkgroup: number;
}

/** One 32-bit word of the uniform block bound after the tensors; packed in order. */
export interface UniformWord {
  readonly type: 'u32' | 'i32' | 'f32';
  readonly value: number;
}

/**
 * Workgroup counts: explicit [x, y, z], or `{ linear: n }` for n workgroups that the queue spreads over
 * x and y when n exceeds the per-dimension limit. A shader dispatched linearly recovers its index as
 * `wid.y * nwg.x + wid.x` (builtins workgroup_id and num_workgroups) and must ignore indexes >= n.
 */
export type Workgroups = readonly [number, number, number] | { readonly linear: number };

export interface WgslDispatch {
  readonly kind: 'dispatch';
  readonly wgsl: string;
  readonly entry: string;
  /** Pipeline-overridable constants (`override` declarations); part of the cache key. */
  readonly constants?: Readonly<Record<string, number>>;
  /** Launch-argument index bound at @group(0) @binding(i), for each i in order. */
  readonly bind: readonly number[];
  /** When present, a uniform buffer holding these words is bound at @binding(bind.length). */
  readonly uniforms?: readonly UniformWord[];
  readonly workgroups: Workgroups;
}

/** A device-side copy between launch arguments (bytes are rounded up to 4, inside the allocation). */
export interface BufferCopy {
  readonly kind: 'copy';
  readonly src: number;
  readonly dst: number;
  readonly bytes: number;
}

export type WebGpuStep = WgslDispatch | BufferCopy;

/** A built-in kernel: says which calls it can run, then plans them. */
export interface WebGpuKernel {
  readonly kind: 'webgpu-kernel';
  supports(args: readonly TensorDesc[], scalars: Scalars, features: WebGpuFeatures): boolean;
  plan(args: readonly TensorDesc[], scalars: Scalars, features: WebGpuFeatures): readonly WebGpuStep[];
}

/**
 * A user's kernel (rt.registerKernel(def, { webgpu: ... })): WGSL, its entry point and workgroup counts.
 * Tensors bind at @group(0) @binding(i) in the op's argument order (every one must be used by the
 * shader: pipelines use the 'auto' layout); the named scalars, if any, follow as one uniform block.
 */
export interface WgslCustomKernel {
  readonly wgsl: string;
  readonly entry: string;
  readonly workgroups: Workgroups | ((args: readonly TensorDesc[], scalars: Scalars) => Workgroups);
  readonly constants?: Readonly<Record<string, number>>;
  /** Scalars packed into the uniform block, in order (booleans as 0/1). */
  readonly uniforms?: readonly { readonly name: string; readonly type: UniformWord['type'] }[];
}

export type WebGpuImpl = WebGpuKernel | WgslCustomKernel;

export function isWebGpuKernel(impl: unknown): impl is WebGpuKernel {
  return typeof impl === 'object' && impl !== null && (impl as { kind?: unknown }).kind === 'webgpu-kernel';
}

export function isWgslCustomKernel(impl: unknown): impl is WgslCustomKernel {
  if (typeof impl !== 'object' || impl === null) return false;
  const k = impl as Partial<WgslCustomKernel>;
  return typeof k.wgsl === 'string' && typeof k.entry === 'string' && k.workgroups !== undefined;
}
