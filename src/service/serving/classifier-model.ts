/**
 * The Fashion-MNIST classifiers (src/nn/models/classifiers.ts: `mlp`, `cnn`) as served models. The
 * weights are built and loaded through the nn modules (so a train job's checkpoint or a PyTorch
 * state_dict loads by name), then a batch runs forward only as plain runtime tasks: the same kernels
 * the modules submit, but on the device the placement rule picked for this batch and labelled with
 * the batch's tags, with no autograd context shared between concurrent batches.
 *
 * One request is one 28×28 image: 784 numbers in [0, 1] (flat or as 28 rows), or `{ "u8": base64 }`
 * of 784 bytes (scaled by 1/255, as the training data are). The answer is the class probabilities and
 * the most likely class; an image whose scores overflow fails alone (TANDEM_ERR_UNSTABLE).
 */
import { TandemError } from '../../core/errors.js';
import type { Tensor } from '../../memory/tensor.js';
import { loadParameters } from '../../nn/checkpoint.js';
import { Nn } from '../../nn/context.js';
import { Cnn, Mlp } from '../../nn/models/classifiers.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { JsonSchema, ServiceRuntime } from '../jobs/job-type.js';
import type { BatchContext, ModelFactory, ModelSpec, ServedModel } from './model.js';

const SIDE = 28;
const PIXELS = SIDE * SIDE;
const F32_MAX = 3.4028234663852886e38;
/** base64 of 784 bytes is 1048 characters; anything much longer is refused before decoding. */
const MAX_B64_CHARS = 1100;
const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface ClassifierOutput {
  readonly probabilities: number[];
  readonly class: number;
}

const INPUT_SCHEMA: JsonSchema = {
  description: 'one 28×28 grey image: 784 numbers in [0, 1], 28 rows of 28, or {u8: base64 of 784 bytes}',
  oneOf: [
    { type: 'array', items: { type: 'number' }, minItems: PIXELS, maxItems: PIXELS },
    {
      type: 'array',
      items: { type: 'array', items: { type: 'number' }, minItems: SIDE, maxItems: SIDE },
      minItems: SIDE,
      maxItems: SIDE,
    },
    {
      type: 'object',
      required: ['u8'],
      additionalProperties: false,
      properties: { u8: { type: 'string', maxLength: MAX_B64_CHARS, contentEncoding: 'base64' } },
    },
  ],
};

const OUTPUT_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['probabilities', 'class'],
  properties: {
    probabilities: { type: 'array', items: { type: 'number' }, description: 'softmax of the scores' },
    class: { type: 'integer', minimum: 0, description: 'the most likely class' },
  },
};

function fail(code: 'TANDEM_ERR_SHAPE' | 'TANDEM_ERR_DTYPE' | 'TANDEM_ERR_INVALID_ARGUMENT', msg: string) {
  return new TandemError(code, `inputs: ${msg}`);
}

function pixel(v: unknown, where: string): number {
  if (typeof v !== 'number')
    throw fail('TANDEM_ERR_DTYPE', `${where} is ${v === null ? 'null' : typeof v}, expected a number`);
  if (!(Math.abs(v) <= F32_MAX)) throw fail('TANDEM_ERR_DTYPE', `${where} (${v}) does not fit in float32`);
  return v;
}

/** One request's image as 784 float32 values; throws SHAPE, DTYPE or INVALID_ARGUMENT. */
export function parseImage(inputs: unknown): Float32Array {
  const out = new Float32Array(PIXELS);
  if (Array.isArray(inputs)) {
    if (inputs.length === PIXELS) {
      for (let i = 0; i < PIXELS; i++) out[i] = pixel(inputs[i], `inputs[${i}]`);
      return out;
    }
    if (inputs.length === SIDE && inputs.every((row) => Array.isArray(row))) {
      for (let r = 0; r < SIDE; r++) {
        const row = inputs[r] as unknown[];
        if (row.length !== SIDE)
          throw fail('TANDEM_ERR_SHAPE', `row ${r} has ${row.length} values, expected ${SIDE}`);
        for (let c = 0; c < SIDE; c++) out[r * SIDE + c] = pixel(row[c], `inputs[${r}][${c}]`);
      }
      return out;
    }
    throw fail(
      'TANDEM_ERR_SHAPE',
      `${inputs.length} values, expected ${PIXELS} (or ${SIDE} rows of ${SIDE})`,
    );
  }
  if (typeof inputs === 'object' && inputs !== null && typeof (inputs as { u8?: unknown }).u8 === 'string') {
    const s = (inputs as { u8: string }).u8;
    if (s.length > MAX_B64_CHARS || !B64.test(s))
      throw fail('TANDEM_ERR_INVALID_ARGUMENT', 'u8 is not base64 of 784 bytes');
    const bytes = Buffer.from(s, 'base64');
    if (bytes.length !== PIXELS)
      throw fail('TANDEM_ERR_SHAPE', `u8 holds ${bytes.length} bytes, expected ${PIXELS}`);
    for (let i = 0; i < PIXELS; i++) out[i] = bytes[i]! / 255;
    return out;
  }
  throw fail(
    'TANDEM_ERR_INVALID_ARGUMENT',
    `expected ${PIXELS} numbers, ${SIDE} rows of ${SIDE}, or {u8: base64}`,
  );
}

interface Layer {
  readonly w: Tensor;
  readonly b: Tensor;
}

/** Forward of the MLP: linear + relu for each hidden layer, linear at the end. Returns the logits. */
function mlpForward(
  rt: ServiceRuntime,
  layers: readonly Layer[],
  x: Tensor,
  ctx: BatchContext,
  scratch: Tensor[],
) {
  const n = x.shape[0]!;
  let h = x;
  layers.forEach((l, i) => {
    const y = rt.tensor([n, l.w.shape[0]!], 'f32');
    const last = i === layers.length - 1;
    if (last) submit(rt, ctx, 'linear', { x: h, w: l.w, b: l.b, y });
    else {
      const pre = rt.tensor([n, l.w.shape[0]!], 'f32');
      scratch.push(pre);
      submit(rt, ctx, 'linear_act', { x: h, w: l.w, b: l.b, pre, y }, { act: 'relu' });
    }
    if (h !== x) scratch.push(h);
    h = y;
  });
  return h;
}

/** Forward of the CNN (classifiers.ts: conv-relu-pool twice, then fc-relu, fc). */
function cnnForward(
  rt: ServiceRuntime,
  p: readonly Layer[],
  x: Tensor,
  ctx: BatchContext,
  scratch: Tensor[],
) {
  const n = x.shape[0]!;
  let h = x;
  let side = SIDE;
  for (const conv of p.slice(0, 2)) {
    const c = conv.w.shape[0]!;
    const y = rt.tensor([n, c, side, side], 'f32');
    submit(rt, ctx, 'conv2d', { x: h, w: conv.w, b: conv.b, y }, { stride: 1, padding: 1 });
    const r = rt.tensor([n, c, side, side], 'f32');
    submit(rt, ctx, 'activation', { x: y, y: r }, { op: 'relu' });
    side = Math.floor(side / 2);
    const pooled = rt.tensor([n, c, side, side], 'f32');
    submit(rt, ctx, 'pool2d', { x: r, y: pooled }, { op: 'max', kernel: 2, stride: 2, padding: 0 });
    scratch.push(y, r);
    if (h !== x) scratch.push(h);
    h = pooled;
  }
  const flat = rt.tensor([n, h.size / n], 'f32');
  submit(rt, ctx, 'copy', { x: h, y: flat });
  scratch.push(h);
  return mlpForward(rt, p.slice(2), flat, ctx, scratch);
}

function submit(
  rt: ServiceRuntime,
  ctx: BatchContext,
  kernel: string,
  args: Record<string, Tensor>,
  scalars: Record<string, number | string> = {},
): void {
  rt.submit({
    kernel,
    args,
    scalars,
    tags: ctx.tags,
    ...(ctx.device === undefined ? {} : { device: ctx.device }),
  });
}

/** Softmax of one row of scores, or UNSTABLE when a score is not finite. */
function answer(scores: Float32Array, row: number, classes: number): ClassifierOutput | TandemError {
  const base = row * classes;
  let best = 0;
  let max = -Infinity;
  for (let c = 0; c < classes; c++) {
    const v = scores[base + c]!;
    if (!Number.isFinite(v))
      return new TandemError(
        'TANDEM_ERR_UNSTABLE',
        `the scores of this image are not finite (class ${c}: ${v})`,
      );
    if (v > max) [max, best] = [v, c];
  }
  const probabilities = new Array<number>(classes);
  let sum = 0;
  for (let c = 0; c < classes; c++) sum += probabilities[c] = Math.exp(scores[base + c]! - max);
  for (let c = 0; c < classes; c++) probabilities[c]! /= sum;
  return { probabilities, class: best };
}

const seedSchema = {
  type: 'integer',
  minimum: 0,
  maximum: 2147483647,
  default: 1,
  description: 'initialisation seed (built-in weights)',
};

const classifierMaxBatch = (kind: 'mlp' | 'cnn'): number => (kind === 'mlp' ? 1024 : 256);

function classifierFactory(kind: 'mlp' | 'cnn'): ModelFactory {
  return {
    kind,
    maxBatchSizeFor: () => classifierMaxBatch(kind),
    description:
      kind === 'mlp'
        ? 'Fashion-MNIST MLP (784 → hidden → 10, relu): one 28×28 image in, class probabilities out'
        : 'Fashion-MNIST CNN (two conv-relu-pool, fc 128, fc 10): one 28×28 image in, class probabilities out',
    configSchema:
      kind === 'mlp'
        ? {
            type: 'object',
            additionalProperties: false,
            properties: {
              sizes: {
                type: 'array',
                items: { type: 'integer', minimum: 1, maximum: 16384 },
                minItems: 2,
                maxItems: 8,
                default: [784, 512, 512, 10],
                description: 'layer widths from the 784 pixels to the classes',
              },
              seed: seedSchema,
            },
          }
        : { type: 'object', additionalProperties: false, properties: { seed: seedSchema } },
    async create(spec: ModelSpec, rt: ServiceRuntime): Promise<ServedModel> {
      const seed = Number(spec.config['seed'] ?? 1);
      const sizes = (spec.config['sizes'] as number[] | undefined) ?? [784, 512, 512, 10];
      if (kind === 'mlp' && sizes[0] !== PIXELS)
        throw new TandemError(
          'TANDEM_ERR_INVALID_ARGUMENT',
          `mlp: sizes must start at ${PIXELS} (the pixels)`,
        );
      const nn = new Nn(rt as unknown as Runtime, { precision: 'f32', seed });
      const module = kind === 'mlp' ? new Mlp(nn, { sizes }) : new Cnn(nn);
      const params = module.namedParameters().map(([, v]) => v.data);
      try {
        if (spec.weightsPath !== undefined) await loadParameters(module, spec.weightsPath);
      } catch (e) {
        for (const t of params) rt.free(t);
        throw e;
      }
      const layers: Layer[] = [];
      for (let i = 0; i < params.length; i += 2) layers.push({ w: params[i]!, b: params[i + 1]! });
      const classes = layers[layers.length - 1]!.w.shape[0]!;
      const forward = kind === 'mlp' ? mlpForward : cnnForward;
      return {
        name: spec.name,
        version: spec.version,
        kind,
        inputSchema: INPUT_SCHEMA,
        outputSchema: OUTPUT_SCHEMA,
        maxBatchSize: classifierMaxBatch(kind),
        weightBytes: params.reduce((s, t) => s + t.size * 4, 0),
        parse: parseImage,
        async runBatch(items: readonly Float32Array[], ctx: BatchContext) {
          const n = items.length;
          const host = new Float32Array(n * PIXELS);
          for (let i = 0; i < n; i++) host.set(items[i]!, i * PIXELS);
          const x = rt.tensor(kind === 'mlp' ? [n, PIXELS] : [n, 1, SIDE, SIDE], 'f32', host);
          const scratch: Tensor[] = [x];
          let logits: Tensor | null = null;
          try {
            logits = forward(rt, layers, x, ctx, scratch);
            for (const t of scratch) rt.free(t);
            scratch.length = 0;
            const scores = (await rt.read(logits)) as Float32Array;
            const out = new Array<ClassifierOutput | TandemError>(n);
            for (let i = 0; i < n; i++) out[i] = answer(scores, i, classes);
            return out;
          } finally {
            for (const t of scratch) rt.free(t);
            if (logits !== null) rt.free(logits);
          }
        },
        async unload() {
          for (const t of params) if (!t.freed) rt.free(t);
        },
      } satisfies ServedModel<Float32Array, ClassifierOutput> as unknown as ServedModel;
    },
  };
}

export const mlpFactory: ModelFactory = classifierFactory('mlp');
export const cnnFactory: ModelFactory = classifierFactory('cnn');
