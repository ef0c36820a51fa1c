/**
 * The `onnx` model kind of the interactive lane: an uploaded .onnx file (ModelSpec.weightsPath) run by
 * the ONNX executor on Tandem's kernels. A batch stacks the items that have the same shapes along the
 * batch axis into one run (items of other shapes run as their own groups); a file that is not valid
 * ONNX or uses something Tandem does not run is refused when the model is registered, so the service
 * keeps serving its other models.
 */
import { TandemError, failedStep } from '../../../core/errors.js';
import { OnnxExecutor, type InputTensor, type OutputTensor } from '../../../onnx/executor.js';
import type { ImageFeed } from '../../../onnx/image-feed.js';
import { isFloatType, numelOf } from '../../../onnx/host-tensor.js';
import { loadOnnxFile, type OnnxModel } from '../../../onnx/model.js';
import { checkOperators } from '../../../onnx/control/ops.js';
import type { JsonSchema, ServiceRuntime } from '../../jobs/job-type.js';
import { fallbackKinds } from '../placement.js';
import type { BatchContext, ModelFactory, ModelPlacement, ModelSpec, ServedModel } from '../model.js';
import { isBatchable, parseOnnxInputs, type OnnxItem } from './onnx-inputs.js';
import {
  checkImageInput,
  checkImagePlacement,
  parsePreprocess,
  preprocessSchema,
  type ImagePreprocess,
} from './onnx-image.js';
import { TensorValues, type ValuesEncoding } from '../tensor-values.js';

/**
 * data: the values, written as JSON numbers, as base64 of little-endian float32 (config outputEncoding
 * 'base64'), or as raw bytes in a binary answer.
 */
export type OnnxOutputs = Record<string, { shape: number[]; data: TensorValues }>;

const tensorSchema: JsonSchema = {
  type: 'object',
  required: ['shape', 'data'],
  properties: {
    shape: { type: 'array', items: { type: 'integer', minimum: 1 } },
    dtype: {
      enum: ['float32', 'uint8'],
      default: 'float32',
      description: "uint8: pixels [H, W, 3] for the input of the model's preprocess config",
    },
    data: {
      oneOf: [
        { type: 'array', items: { type: 'number' } },
        { type: 'string', description: 'base64 of little-endian float32 (or of the bytes, for uint8)' },
      ],
    },
  },
};

export const onnxConfigSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxBatchSize: { type: 'integer', minimum: 1, maximum: 1024, default: 16 },
    floatDType: {
      enum: ['f32', 'f16', 'bf16'],
      default: 'f32',
      description: 'compute dtype of float values on GPUs (f16/bf16 lose accuracy)',
    },
    sequences: {
      type: 'boolean',
      default: false,
      description: "submit each run's kernels as a few runtime sequence tasks (less host work per batch)",
    },
    outputEncoding: {
      enum: ['json', 'base64'],
      default: 'json',
      description:
        "outputs' data as JSON numbers, or as base64 of little-endian float32 (large outputs: an image-sized map is ~8 MB of JSON)",
    },
    preprocess: preprocessSchema,
  },
};

function config(spec: ModelSpec): {
  maxBatchSize: number;
  floatDType: 'f32' | 'f16' | 'bf16';
  outputEncoding: ValuesEncoding;
  sequences: boolean;
  preprocess: ImagePreprocess | undefined;
} {
  const c = spec.config;
  for (const k of Object.keys(c))
    if (!['maxBatchSize', 'floatDType', 'outputEncoding', 'sequences', 'preprocess'].includes(k))
      throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `onnx config: unknown key '${k}'`);
  const maxBatchSize = c.maxBatchSize ?? 16;
  if (
    typeof maxBatchSize !== 'number' ||
    !Number.isInteger(maxBatchSize) ||
    maxBatchSize < 1 ||
    maxBatchSize > 1024
  )
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'onnx config: maxBatchSize must be an integer in [1, 1024]',
    );
  const floatDType = c.floatDType ?? 'f32';
  if (floatDType !== 'f32' && floatDType !== 'f16' && floatDType !== 'bf16')
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'onnx config: floatDType must be f32, f16 or bf16');
  const outputEncoding = c.outputEncoding ?? 'json';
  if (outputEncoding !== 'json' && outputEncoding !== 'base64')
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'onnx config: outputEncoding must be json or base64',
    );
  const sequences = c.sequences ?? false;
  if (typeof sequences !== 'boolean')
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'onnx config: sequences must be a boolean');
  return { maxBatchSize, floatDType, outputEncoding, sequences, preprocess: parsePreprocess(c.preprocess) };
}

function weightBytesOf(model: OnnxModel): number {
  let n = 0;
  for (const t of model.initializers.values()) n += numelOf(t.dims) * (isFloatType(t.type) ? 4 : 8);
  for (const node of model.nodes) {
    const v = node.attrs.get('value');
    if (node.opType === 'Constant' && typeof v === 'object' && v !== null && !Array.isArray(v) && 'dims' in v)
      n += numelOf(v.dims) * 4;
  }
  return n;
}

class OnnxServedModel implements ServedModel<OnnxItem, OnnxOutputs> {
  readonly kind = 'onnx';
  readonly inputSchema: JsonSchema;
  readonly outputSchema: JsonSchema;
  readonly maxBatchSize: number;
  readonly weightBytes: number;
  private readonly batchable: boolean;

  constructor(
    readonly name: string,
    readonly version: number,
    private readonly model: OnnxModel,
    private readonly exec: OnnxExecutor,
    private readonly floatDType: 'f32' | 'f16' | 'bf16',
    maxBatchSize: number,
    private readonly outputEncoding: ValuesEncoding = 'json',
    private readonly sequences = false,
    private readonly placement: ModelPlacement,
    private readonly preprocess?: ImagePreprocess,
  ) {
    this.batchable = isBatchable(model);
    this.maxBatchSize = this.batchable ? maxBatchSize : 1;
    this.weightBytes = weightBytesOf(model);
    const names = (vs: ReadonlyArray<{ name: string }>) =>
      Object.fromEntries(vs.map((v) => [v.name, tensorSchema]));
    this.inputSchema = {
      type: 'object',
      required: model.inputs.map((v) => v.name),
      properties: names(model.inputs),
      additionalProperties: false,
    };
    this.outputSchema = { type: 'object', properties: names(model.outputs) };
  }

  /**
   * Free staging buffers per input and element type (float32 values, uint8 pixels), each room for
   * maxBatchSize items (groups of one batch run together).
   */
  private readonly staging = new Map<string, Array<Float32Array | Uint8Array>>();

  private takeStaging<T extends Float32Array | Uint8Array>(
    key: string,
    per: number,
    make: new (n: number) => T,
  ): T {
    let free = this.staging.get(key);
    if (!free) this.staging.set(key, (free = []));
    // Items of another shape need another size: a buffer too small for this one is dropped.
    for (let b = free.pop(); b !== undefined; b = free.pop())
      if (b instanceof make && b.length >= per * this.maxBatchSize) return b;
    return new make(per * this.maxBatchSize);
  }

  parse(inputs: unknown): OnnxItem {
    return parseOnnxInputs(this.model, inputs, this.preprocess?.input);
  }

  async runBatch(items: readonly OnnxItem[], ctx: BatchContext): Promise<Array<OnnxOutputs | TandemError>> {
    const results = new Array<OnnxOutputs | TandemError>(items.length);
    const groups = new Map<string, number[]>();
    items.forEach((it, i) => groups.set(it.key, [...(groups.get(it.key) ?? []), i]));
    await Promise.all(
      [...groups.values()].map(async (idx) => {
        try {
          const outs = await this.runGroup(
            idx.map((i) => items[i]!),
            ctx,
          );
          idx.forEach((i, k) => (results[i] = outs[k]!));
        } catch (err) {
          const e =
            err instanceof TandemError
              ? failedStep(err, 'onnx')
              : new TandemError('TANDEM_ERR_INTERNAL', `onnx: ${String(err)}`);
          for (const i of idx) results[i] = e;
        }
      }),
    );
    return results;
  }

  /** Items of one shape stacked along the batch axis (or run alone for a model without one). */
  private async runGroup(group: readonly OnnxItem[], ctx: BatchContext): Promise<OnnxOutputs[]> {
    const n = group.length;
    const feeds: Record<string, InputTensor> = {};
    const staged: Array<[string, Float32Array | Uint8Array]> = [];
    const images: Record<string, ImageFeed> = {};
    for (const info of this.model.inputs) {
      const first = group[0]!.tensors.get(info.name)!;
      // Pixels (every item of the group has them: its key says so): stacked as bytes, [n, H, W, 3];
      // the executor normalizes them on the device.
      if (first.data instanceof Uint8Array && this.preprocess) {
        images[info.name] = { params: this.preprocess };
        const per = first.data.length;
        const key = `${info.name}:u8`;
        const stage = this.takeStaging(key, per, Uint8Array);
        staged.push([key, stage]);
        group.forEach((it, k) => stage.set(it.tensors.get(info.name)!.data, k * per));
        feeds[info.name] = { dims: [n, ...first.dims], data: stage.subarray(0, per * n), type: 'uint8' };
        continue;
      }
      if (!this.batchable) {
        feeds[info.name] = { dims: first.dims, data: first.data };
        continue;
      }
      const per = first.data.length;
      // Float32 when every item is (base64 or binary inputs): stacked in a reused staging buffer, which
      // the executor copies into its upload buffer; a fresh 16-image batch (78 MB at 640×640) cost more
      // in page faults than in copying.
      const f32 = group.every((it) => it.tensors.get(info.name)!.data instanceof Float32Array);
      let data: Float32Array | Float64Array;
      if (f32) {
        const stage = this.takeStaging(info.name, per, Float32Array);
        staged.push([info.name, stage]);
        data = stage.subarray(0, per * n);
      } else data = new Float64Array(per * n);
      group.forEach((it, k) => data.set(it.tensors.get(info.name)!.data, k * per));
      feeds[info.name] = { dims: [n, ...first.dims], data };
    }
    let out: Awaited<ReturnType<OnnxExecutor['run']>>;
    try {
      out = await this.exec.run(feeds, {
        device: ctx.device,
        // Kernels the batch's device cannot run go to the placement's other kinds, never outside it.
        fallback: fallbackKinds(ctx.device, this.placement, ctx.rt),
        tags: ctx.tags,
        floatDType: this.floatDType,
        sequences: this.sequences,
        ...(Object.keys(images).length > 0 ? { images } : {}),
      });
    } finally {
      // The executor has copied the inputs by the time its run settles.
      for (const [name, stage] of staged) this.staging.get(name)!.push(stage);
    }
    return Array.from({ length: n }, (_, k) => {
      const item: OnnxOutputs = {};
      for (const [name, t] of Object.entries(out))
        item[name] = this.batchable
          ? this.slice(name, t, n, k)
          : { shape: [...t.dims], data: new TensorValues(t.data, this.outputEncoding, name) };
      return item;
    });
  }

  private slice(
    name: string,
    t: OutputTensor,
    n: number,
    k: number,
  ): { shape: number[]; data: TensorValues } {
    if (t.dims[0] !== n)
      throw new TandemError(
        'TANDEM_ERR_SHAPE',
        `onnx: an output's first axis is ${t.dims[0]}, not the batch of ${n}`,
      );
    const per = t.data.length / n;
    return {
      shape: t.dims.slice(1),
      data: new TensorValues(t.data.subarray(k * per, (k + 1) * per), this.outputEncoding, name),
    };
  }

  async unload(): Promise<void> {
    this.exec.close();
  }
}

export const onnxFactory: ModelFactory = {
  kind: 'onnx',
  description:
    'an uploaded ONNX model (opsets 9–21), run by Tandem on CPU, CUDA or WebGPU kernels; inputs are named tensors {name: {shape, data}}',
  configSchema: onnxConfigSchema,
  // The config's limit (default 16); a graph whose batch dimension is fixed lowers it to 1 when it loads.
  maxBatchSizeFor: (c) => {
    const n = c['maxBatchSize'] ?? 16;
    return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : undefined;
  },
  async create(spec: ModelSpec, rt: ServiceRuntime): Promise<ServedModel> {
    const cfg = config(spec);
    if (!spec.weightsPath)
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        "a model of kind 'onnx' needs an uploaded .onnx file",
      );
    const model = loadOnnxFile(spec.weightsPath);
    checkOperators(model);
    // Requests carry tensors: a sequence or optional graph value is refused now, not per request.
    const nonTensor = [...model.inputs, ...model.outputs].find((v) => (v.kind ?? 'tensor') !== 'tensor');
    if (nonTensor)
      throw new TandemError(
        'TANDEM_ERR_UNSUPPORTED',
        `onnx: graph value '${nonTensor.name}' is a ${nonTensor.kind}; served models take and answer tensors`,
        { value: nonTensor.name },
      );
    if (cfg.preprocess) {
      checkImageInput(model, cfg.preprocess, isBatchable(model));
      checkImagePlacement(spec.placement);
    }
    return new OnnxServedModel(
      spec.name,
      spec.version,
      model,
      new OnnxExecutor(model, rt),
      cfg.floatDType,
      cfg.maxBatchSize,
      cfg.outputEncoding,
      cfg.sequences,
      spec.placement,
      cfg.preprocess,
    );
  },
};
