/**
 * Graph inputs fed as uint8 pixels (RunOptions.images): the checks on the pixels' dims and the
 * image_normalize task that turns them into the float N×3×H×W input the graph reads (kernels/
 * image_normalize). The executor uploads the bytes through its kept I/O tensors like any input.
 * The same submission (`submitIoKernel`) casts an f16/bf16 run's f32 inputs and outputs on its device.
 */
import { TandemError } from '../core/errors.js';
import { imageNormalizeScalars, type ImageNormalizeParams } from '../kernels/image_normalize/params.js';
import type { Scalars } from '../devices/device.js';
import type { Tensor } from '../memory/tensor.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TaskHandle } from '../runtime/task.js';
import type { KernelPlacement } from './fallback.js';
import { isFloatType, type ElemType } from './host-tensor.js';

export interface ImageFeed {
  readonly params: ImageNormalizeParams;
}

/** The graph-side dims (N×3×H×W) of an image feed (N×H×W×3 uint8), checked. */
export function imageDims(
  name: string,
  f: { readonly dims: readonly number[]; readonly data: ArrayLike<number> },
  type: ElemType | undefined,
): number[] {
  const [n, h, w, c] = f.dims;
  if (f.dims.length !== 4 || c !== 3 || !(f.data instanceof Uint8Array))
    throw new TandemError(
      'TANDEM_ERR_SHAPE',
      `onnx: image input '${name}' must be uint8 [N, H, W, 3], got [${f.dims.join(', ')}]`,
      { input: name },
    );
  if (type !== undefined && !isFloatType(type))
    throw new TandemError('TANDEM_ERR_DTYPE', `onnx: input '${name}' is ${type}, not a float image`, {
      input: name,
    });
  return [n!, 3, h!, w!];
}

/**
 * Submits a kernel from x into y (image_normalize, or a cast of an f16/bf16 run's inputs and outputs),
 * placed like the run's kernels (on a WebGPU run, which has no WGSL for image_normalize or bf16, on the
 * fallback); y is freed if the submit throws and `freeOnError` is set.
 */
export function submitIoKernel(
  rt: Pick<Runtime, 'submit' | 'free'>,
  kernel: 'image_normalize' | 'cast',
  io: { readonly x: Tensor; readonly y: Tensor },
  scalars: Scalars,
  node: string,
  placement: KernelPlacement,
  tags: Readonly<Record<string, string>> | undefined,
  freeOnError = true,
): TaskHandle {
  try {
    const args = { x: io.x, y: io.y };
    return rt.submit({
      kernel,
      args,
      scalars,
      device: placement.deviceFor(kernel, args, scalars, node),
      name: node,
      tags,
    });
  } catch (e) {
    if (freeOnError) rt.free(io.y);
    throw e;
  }
}

/** image_normalize from the pixels x into the graph input y (submitIoKernel). */
export function submitImageNormalize(
  rt: Pick<Runtime, 'submit' | 'free'>,
  io: { readonly x: Tensor; readonly y: Tensor },
  image: ImageFeed,
  name: string,
  placement: KernelPlacement,
  tags: Readonly<Record<string, string>> | undefined,
): TaskHandle {
  const scalars = imageNormalizeScalars(image.params);
  return submitIoKernel(rt, 'image_normalize', io, scalars, `image_normalize:${name}`, placement, tags);
}
