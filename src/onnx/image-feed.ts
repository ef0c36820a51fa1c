/**
 * Graph inputs fed as uint8 pixels (RunOptions.images): the checks on the pixels' dims and the
 * image_normalize task that turns them into the float N×3×H×W input the graph reads (kernels/
 * image_normalize). The executor uploads the bytes through its kept I/O tensors like any input.
 */
import { TandemError } from '../core/errors.js';
import { imageNormalizeScalars, type ImageNormalizeParams } from '../kernels/image_normalize/params.js';
import type { Tensor } from '../memory/tensor.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TaskHandle } from '../runtime/task.js';
import { isFloatType, type ElemType } from './host-tensor.js';

export interface ImageFeed {
  readonly params: ImageNormalizeParams;
  /** Where image_normalize runs when the run's device has no implementation of it (WebGPU). */
  readonly device?: string;
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

/** Submits image_normalize from the pixels x into the graph input y; y is freed if the submit throws. */
export function submitImageNormalize(
  rt: Pick<Runtime, 'submit' | 'free'>,
  io: { readonly x: Tensor; readonly y: Tensor },
  image: ImageFeed,
  name: string,
  device: string | undefined,
  tags: Readonly<Record<string, string>> | undefined,
): TaskHandle {
  try {
    return rt.submit({
      kernel: 'image_normalize',
      args: { x: io.x, y: io.y },
      scalars: imageNormalizeScalars(image.params),
      device: image.device ?? device,
      name: `image_normalize:${name}`,
      tags,
    });
  } catch (e) {
    rt.free(io.y);
    throw e;
  }
}
