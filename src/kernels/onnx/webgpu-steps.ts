/**
 * The dispatch shape shared by the onnx_ WGSL kernels (webgpu-compute/-layout/-norm.ts): one invocation
 * per output element in workgroups of 256, the sizes and strides as u32 uniform words.
 */
import type { UniformWord, WebGpuStep } from '../../devices/webgpu/kernel-api.js';

export const u32 = (value: number): UniformWord => ({ type: 'u32', value });

/** One dispatch of `wgsl`'s `main` over `n` invocations (none when `n` is 0). */
export function linearStep(
  wgsl: string,
  n: number,
  bind: readonly number[],
  words: readonly UniformWord[],
): WebGpuStep[] {
  if (n === 0) return [];
  return [
    {
      kind: 'dispatch',
      wgsl,
      entry: 'main',
      bind,
      uniforms: words,
      workgroups: { linear: Math.ceil(n / 256) },
    },
  ];
}
