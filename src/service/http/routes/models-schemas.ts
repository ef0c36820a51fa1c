/** JSON schemas (with examples) of the model routes (models.ts): registration, descriptions, infer. */
import { HARDWARE_KINDS } from '../../../devices/device.js';

const NAME = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$', description: 'model name' };

export const MODEL_PARAMS = {
  type: 'object',
  required: ['name'],
  properties: { name: NAME },
} as const;

export const VERSION_PARAMS = {
  type: 'object',
  required: ['name', 'version'],
  properties: { name: NAME, version: { type: 'string', pattern: '^[0-9]{1,9}$' } },
} as const;

const PLACEMENT = {
  type: 'object',
  additionalProperties: false,
  required: ['kinds'],
  description: 'device kinds that may serve the model, in order of preference',
  properties: {
    kinds: {
      type: 'array',
      items: { type: 'string', enum: [...HARDWARE_KINDS] },
      minItems: 1,
      uniqueItems: true,
    },
    preferIdle: {
      type: 'boolean',
      description: 'the first listed kind whose devices no job is using (e.g. the CPU while the GPUs train)',
    },
  },
} as const;

const BATCHING = {
  type: 'object',
  additionalProperties: false,
  description: "the dynamic batcher's knobs (Triton's); what is left out keeps its default",
  properties: {
    maxBatchSize: { type: 'integer', minimum: 1, maximum: 4096, description: 'capped by the model' },
    preferredBatchSizes: {
      type: 'array',
      items: { type: 'integer', minimum: 1, maximum: 4096 },
      maxItems: 16,
      description: 'sent as soon as this many wait (the largest that fits)',
    },
    maxQueueDelayUs: {
      type: 'integer',
      minimum: 0,
      maximum: 10_000_000,
      description: 'how long the oldest request waits for others, from its own arrival',
    },
    priorityLevels: {
      type: 'integer',
      minimum: 1,
      maximum: 16,
      description: 'priority p is level clamp(p, 0, n−1)',
    },
    priorityBatching: {
      type: 'string',
      enum: ['fill', 'level'],
      description:
        "fill: higher levels first, the batch filled from lower ones (Triton's); level: a batch holds one level only",
    },
    maxQueueSize: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      description: 'beyond it: 429 + Retry-After',
    },
    timeoutUs: {
      type: 'integer',
      minimum: 0,
      maximum: 3_600_000_000,
      description: 'default queue timeout, 0: none',
    },
    onTimeout: { type: 'string', enum: ['reject', 'delay'], description: '504, or served after all others' },
    instances: { type: 'integer', minimum: 1, maximum: 64, description: 'batches running at once' },
  },
} as const;

const EXAMPLE_BATCHING = {
  maxBatchSize: 64,
  preferredBatchSizes: [],
  maxQueueDelayUs: 500,
  priorityLevels: 2,
  priorityBatching: 'fill',
  maxQueueSize: 1024,
  timeoutUs: 0,
  onTimeout: 'reject',
  instances: 1,
};

export const REGISTER_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'kind'],
  properties: {
    name: NAME,
    kind: { type: 'string', maxLength: 64, description: 'the factory: mlp, cnn, ... (GET /v1/model-kinds)' },
    version: { type: 'integer', minimum: 1, maximum: 999_999_999, description: 'default: the next one' },
    config: { type: 'object', description: "the kind's configuration (its configSchema)" },
    placement: PLACEMENT,
    batching: BATCHING,
    warmup: {
      type: 'object',
      additionalProperties: false,
      required: ['inputs'],
      description:
        "requests run through the model before it is ready (Triton's model_warmup): `inputs` as an infer request's, " +
        '`requests` of them one after another (default 200; for at most 5 s), then one full batch',
      properties: {
        inputs: { description: "one request's inputs, as POST .../infer takes them" },
        requests: { type: 'integer', minimum: 1, maximum: 100_000 },
      },
    },
    fromJob: {
      type: 'string',
      maxLength: 64,
      pattern: '^[A-Za-z0-9_-]+$',
      description: "weights from this finished train job's last checkpoint",
    },
    upload: {
      type: 'string',
      pattern: '^upl_[0-9a-f]{24}$',
      description: 'weights from this upload (POST /v1/models/uploads)',
    },
  },
  examples: [
    {
      name: 'fashion',
      kind: 'mlp',
      config: { seed: 1 },
      placement: { kinds: ['cuda', 'cpu'], preferIdle: true },
      batching: { maxBatchSize: 64, maxQueueDelayUs: 500 },
    },
  ],
} as const;

const EXAMPLE_VERSION = {
  name: 'fashion',
  version: 1,
  kind: 'mlp',
  state: 'ready',
  error: null,
  config: { sizes: [784, 512, 512, 10], seed: 1 },
  placement: { kinds: ['cuda', 'cpu'], preferIdle: true },
  batching: EXAMPLE_BATCHING,
  weightBytes: 2681896,
  source: { type: 'builtin' },
  createdAt: '2026-12-03T16:00:00.000Z',
  inputSchema: { description: 'one 28×28 grey image' },
  outputSchema: { type: 'object' },
  queued: 0,
  inFlight: 0,
  stats: {
    requests: 1200,
    failures: 0,
    batches: 90,
    meanBatchSize: 13.3,
    throughput: 120,
    p50Ms: 0.8,
    p99Ms: 2.1,
    perSecond: [{ t: 1796313600, requests: 120, meanBatchSize: 13.3 }],
  },
};

const anyObject = { type: 'object', additionalProperties: true } as const;

export const VERSION_SCHEMA = {
  type: 'object',
  required: ['name', 'version', 'kind', 'state', 'placement', 'batching', 'createdAt'],
  properties: {
    name: { type: 'string' },
    version: { type: 'integer' },
    kind: { type: 'string' },
    state: { type: 'string', enum: ['registered', 'loading', 'ready', 'failed'] },
    error: {
      type: ['object', 'null'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
    config: anyObject,
    placement: {
      type: 'object',
      properties: { kinds: { type: 'array', items: { type: 'string' } }, preferIdle: { type: 'boolean' } },
    },
    batching: {
      type: 'object',
      properties: {
        maxBatchSize: { type: 'integer' },
        preferredBatchSizes: { type: 'array', items: { type: 'integer' } },
        maxQueueDelayUs: { type: 'integer' },
        priorityLevels: { type: 'integer' },
        priorityBatching: { type: 'string' },
        maxQueueSize: { type: 'integer' },
        timeoutUs: { type: 'integer' },
        onTimeout: { type: 'string' },
        instances: { type: 'integer' },
      },
    },
    weightBytes: { type: ['integer', 'null'] },
    warmupRequests: { type: ['integer', 'null'] },
    source: {
      type: 'object',
      properties: { type: { type: 'string', enum: ['builtin', 'job', 'upload'] }, job: { type: 'string' } },
    },
    createdAt: { type: 'string', format: 'date-time' },
    inputSchema: { type: ['object', 'null'], additionalProperties: true },
    outputSchema: { type: ['object', 'null'], additionalProperties: true },
    queued: { type: 'integer' },
    inFlight: { type: 'integer' },
    stats: {
      type: 'object',
      properties: {
        requests: { type: 'integer' },
        failures: { type: 'integer' },
        batches: { type: 'integer' },
        meanBatchSize: { type: 'number' },
        throughput: { type: 'number', description: 'answered requests a second over the last 10 s' },
        p50Ms: { type: ['number', 'null'] },
        p99Ms: { type: ['number', 'null'] },
        perSecond: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              t: { type: 'integer' },
              requests: { type: 'number' },
              meanBatchSize: { type: 'number' },
            },
          },
        },
      },
    },
  },
  examples: [EXAMPLE_VERSION],
} as const;

export const MODEL_SCHEMA = {
  type: 'object',
  required: ['name', 'versions'],
  properties: { name: { type: 'string' }, versions: { type: 'array', items: VERSION_SCHEMA } },
  examples: [{ name: 'fashion', versions: [EXAMPLE_VERSION] }],
} as const;

export const MODEL_LIST_SCHEMA = {
  type: 'object',
  required: ['models'],
  properties: { models: { type: 'array', items: MODEL_SCHEMA } },
  examples: [{ models: [{ name: 'fashion', versions: [EXAMPLE_VERSION] }] }],
} as const;

export const UNLOAD_SCHEMA = {
  type: 'object',
  required: ['name', 'unloaded'],
  properties: { name: { type: 'string' }, unloaded: { type: 'array', items: { type: 'integer' } } },
  examples: [{ name: 'fashion', unloaded: [1] }],
} as const;

export const UPLOAD_SCHEMA = {
  type: 'object',
  required: ['upload', 'bytes'],
  properties: { upload: { type: 'string' }, bytes: { type: 'integer' } },
  examples: [{ upload: 'upl_0123456789abcdef01234567', bytes: 2681896 }],
} as const;

export const KINDS_SCHEMA = {
  type: 'object',
  required: ['kinds'],
  properties: {
    kinds: {
      type: 'array',
      items: {
        type: 'object',
        properties: { kind: { type: 'string' }, description: { type: 'string' }, config: anyObject },
      },
    },
  },
  examples: [{ kinds: [{ kind: 'mlp', description: 'Fashion-MNIST MLP', config: { type: 'object' } }] }],
} as const;

export const INFER_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['inputs'],
  properties: {
    inputs: { description: "one item, as the model's inputSchema (GET /v1/models/{name})" },
    priority: {
      type: 'integer',
      minimum: -100,
      maximum: 100,
      default: 0,
      description: 'higher is served first',
    },
    timeoutMs: {
      type: 'number',
      minimum: 0,
      maximum: 3_600_000,
      description: 'answered 504 if its batch has not started by then (never run)',
    },
    binaryOutputs: {
      type: 'boolean',
      default: false,
      description:
        "answer as application/octet-stream: a JSON header of Inference-Header-Content-Length bytes, in which each tensor output gives binaryDataSize instead of data, then those outputs' bytes (little-endian float32) in order. A request body may be binary the same way: application/octet-stream, the JSON first (its length in the Inference-Header-Content-Length header), a tensor input giving binaryDataSize instead of data, its bytes after the JSON in the order of the inputs (Triton's binary tensor extension)",
    },
  },
  examples: [{ inputs: { u8: 'AAAA…(784 bytes, base64)' }, priority: 0, timeoutMs: 100 }],
} as const;

export const INFER_ANSWER = {
  type: 'object',
  required: ['model', 'version', 'outputs'],
  properties: {
    model: { type: 'string' },
    version: { type: 'integer' },
    outputs: { description: "the model's outputSchema" },
  },
  examples: [{ model: 'fashion', version: 1, outputs: { probabilities: [0.01, 0.9, 0.09], class: 1 } }],
} as const;
