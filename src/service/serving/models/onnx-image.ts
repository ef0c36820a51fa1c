/**
 * The onnx kind's `preprocess` config: one float image input (N×3×H×W) that requests may send as the
 * uint8 pixels they come as (H×W×3, RGB), normalized on the device by the image_normalize kernel as the
 * first task of the batch's run. Why: the OCR lane's 640×640 image is 4.9 MB of float32 per request and
 * reading the body was most of the server's time; as bytes it is 1.2 MB, over HTTP and into the device.
 */
import { TandemError } from '../../../core/errors.js';
import type { ImageNormalizeParams } from '../../../kernels/image_normalize/params.js';
import { imageNormalizeGroup } from '../../../kernels/onnx/image-group.js';
import { isFloatType } from '../../../onnx/host-tensor.js';
import type { OnnxModel } from '../../../onnx/model.js';
import type { JsonSchema } from '../../jobs/job-type.js';
import type { ModelPlacement } from '../model.js';

export interface ImagePreprocess extends ImageNormalizeParams {
  /** The graph input the pixels feed. */
  readonly input: string;
}

const triple = (what: string): JsonSchema => ({
  type: 'array',
  items: { type: 'number' },
  minItems: 3,
  maxItems: 3,
  description: `${what} per model input channel (in the order of channels)`,
});

export const preprocessSchema: JsonSchema = {
  type: 'object',
  required: ['input'],
  additionalProperties: false,
  description:
    "lets `input` (float, N×3×H×W) be sent as uint8 pixels [H, W, 3] (RGB; dtype 'uint8'), normalized on the device: (x·scale − mean[c]) / std[c]",
  properties: {
    input: { type: 'string', description: 'the graph input the image feeds' },
    scale: { type: 'number', default: 1 / 255 },
    mean: { ...triple('subtracted after scaling'), default: [0, 0, 0] },
    std: { ...triple('divides'), default: [1, 1, 1] },
    channels: {
      enum: ['rgb', 'bgr'],
      default: 'rgb',
      description: "the model's channel order (pixels arrive as RGB; bgr swaps R and B)",
    },
  },
};

const invalid = (message: string) =>
  new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `onnx config: preprocess ${message}`);

function numbers3(v: unknown, name: string, fallback: number): [number, number, number] {
  if (v === undefined) return [fallback, fallback, fallback];
  if (!Array.isArray(v) || v.length !== 3 || v.some((x) => typeof x !== 'number' || !Number.isFinite(x)))
    throw invalid(`.${name} must be an array of 3 finite numbers`);
  return [v[0] as number, v[1] as number, v[2] as number];
}

/** The config's `preprocess` checked on its own (the model file is checked by `checkImageInput`). */
export function parsePreprocess(raw: unknown): ImagePreprocess | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid('must be an object {input, scale?, mean?, std?, channels?}');
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c))
    if (!['input', 'scale', 'mean', 'std', 'channels'].includes(k))
      throw invalid(`has an unknown key '${k}' (it takes input, scale, mean, std, channels)`);
  if (typeof c['input'] !== 'string' || c['input'] === '')
    throw invalid(".input must name the model's image input");
  const scale = c['scale'] ?? 1 / 255;
  if (typeof scale !== 'number' || !Number.isFinite(scale)) throw invalid('.scale must be a finite number');
  const std = numbers3(c['std'], 'std', 1);
  if (std.includes(0)) throw invalid('.std must not hold 0');
  const channels = c['channels'] ?? 'rgb';
  if (channels !== 'rgb' && channels !== 'bgr') throw invalid(".channels must be 'rgb' or 'bgr'");
  return { input: c['input'], scale, mean: numbers3(c['mean'], 'mean', 0), std, channels };
}

/**
 * The input must be a float N×3×H×W one (concrete dims checked against the pixels later, per request):
 * refused at registration otherwise, like the rest of the config.
 */
export function checkImageInput(model: OnnxModel, p: ImagePreprocess, batchable: boolean): void {
  const info = model.inputs.find((v) => v.name === p.input);
  if (!info)
    throw invalid(
      `.input: the model has no input '${p.input}' (it has ${model.inputs.map((v) => v.name).join(', ')})`,
    );
  const dims = info.dims;
  if (
    !isFloatType(info.type) ||
    dims === null ||
    dims.length !== 4 ||
    (typeof dims[1] === 'number' && dims[1] !== 3)
  )
    throw invalid(
      `.input: '${p.input}' must be a float [N, 3, H, W] input, it is ${info.type} [${(dims ?? []).map((d) => d ?? '?').join(', ')}]`,
    );
  if (!batchable && dims[0] !== 1)
    throw invalid(
      `.input: '${p.input}' has a fixed batch of ${String(dims[0])}; an image request is one image`,
    );
}

/** The device kinds with an image_normalize implementation (no WebGPU one). */
export const IMAGE_KINDS: readonly string[] = imageNormalizeGroup.impls.map((e) => e.backend);

/** A placement that can run the normalization somewhere: refused at registration otherwise. */
export function checkImagePlacement(placement: ModelPlacement): void {
  if (!placement.kinds.some((k) => IMAGE_KINDS.includes(k)))
    throw invalid(
      `needs a device kind that runs image_normalize (${IMAGE_KINDS.join(', ')}); the placement allows ${placement.kinds.join(', ')}`,
    );
}
