/**
 * The interactive lane's routes (docs/serving.md): model registration, listing, unloading, weight
 * uploads, and `infer`, which parses one request, queues it in the version's dynamic batcher and
 * answers when its batch has run, writing nothing durable. A client that goes away before its batch
 * starts is taken out of the queue (its slot freed, never run).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { TandemError } from '../../../core/errors.js';
import type { Tenant } from '../../auth/tenants.js';
import type { BatchingConfig } from '../../serving/batcher.js';
import type { ModelPlacement } from '../../serving/model.js';
import type { ModelRepository, ModelVersion } from '../../serving/repository.js';
import { tenantOf } from '../auth.js';
import { sendError } from '../errors.js';
import {
  BINARY_CONTENT_TYPE,
  HEADER_LENGTH,
  binaryAnswer,
  holdBody,
  parseBinaryBody,
  readBinaryBody,
  releaseBody,
} from '../binary-tensors.js';
import {
  INFER_ANSWER,
  INFER_BODY,
  KINDS_SCHEMA,
  MODEL_LIST_SCHEMA,
  MODEL_PARAMS,
  MODEL_SCHEMA,
  REGISTER_BODY,
  UNLOAD_SCHEMA,
  UPLOAD_SCHEMA,
  VERSION_PARAMS,
  VERSION_SCHEMA,
} from './models-schemas.js';

interface RegisterBody {
  name: string;
  kind: string;
  version?: number;
  config?: Record<string, unknown>;
  placement?: ModelPlacement;
  batching?: Partial<BatchingConfig>;
  warmup?: { inputs: unknown; requests?: number };
  fromJob?: string;
  upload?: string;
}

interface InferBody {
  inputs: unknown;
  priority: number;
  timeoutMs?: number;
  /** Answer as a binary body (binary-tensors.ts) instead of JSON. */
  binaryOutputs?: boolean;
}

/** Largest weights file accepted by POST /v1/models/uploads. */
export const MAX_UPLOAD_BYTES = 2 * 2 ** 30;

/**
 * Largest infer body (the service's bodyLimit is for small JSON): an image model's request carries a
 * tensor (a 3x640x640 float32 image is 6.5 MB as base64), and the onnx kind accepts up to 2^24 values,
 * ~90 MB as base64.
 */
export const MAX_INFER_BODY_BYTES = 96 * 2 ** 20;

function checkConfig(
  repo: ModelRepository,
  req: FastifyRequest,
  body: RegisterBody,
): Record<string, unknown> {
  const factory = repo.kinds.find((f) => f.kind === body.kind);
  if (!factory)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `unknown model kind ${JSON.stringify(body.kind)}`, {
      known: repo.kinds.map((f) => f.kind),
    });
  const config = { ...(body.config ?? {}) };
  const validate = req.compileValidationSchema(factory.configSchema);
  if (!validate(config)) {
    const e = validate.errors?.[0];
    const extra = e?.keyword === 'additionalProperties' ? `/${String(e.params['additionalProperty'])}` : '';
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `config${e?.instancePath ?? ''}${extra} ${extra ? 'is not a known setting' : (e?.message ?? 'is invalid')}`,
      { kind: body.kind },
    );
  }
  const b = body.batching;
  const max = b?.maxBatchSize ?? 64;
  if (b?.preferredBatchSizes?.some((s) => s > max))
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `batching: a preferred batch size is larger than maxBatchSize (${max})`,
    );
  return config;
}

/** Answers one infer request: parse, queue, wait for the batch, serialise with Server-Timing. */
async function infer(
  repo: ModelRepository,
  req: FastifyRequest<{ Body: InferBody }>,
  reply: FastifyReply,
  name: string,
  version: number | undefined,
): Promise<FastifyReply> {
  const t0 = performance.now();
  repo.hotLoop.touch();
  const tenant: Tenant = tenantOf(req);
  const v: ModelVersion = repo.readyNow(name, version) ?? (await repo.ready(name, version));
  const model = v.model!;
  const batcher = v.batcher!;
  const ver = v.reg.version;
  let item: unknown;
  try {
    item = model.parse(req.body.inputs);
  } catch (e) {
    const code = e instanceof TandemError ? e.code : 'TANDEM_ERR_INTERNAL';
    repo.metrics?.request(name, ver, tenant.name, 0, code);
    v.stats.request(performance.now() - t0, true);
    throw e;
  }
  // The validated body carries the submit options (priority, timeoutMs when given) as they are.
  const pending = batcher.submit(item, req.body);
  // From the request's arrival (Fastify's clock) to the batcher: routing, auth, body, validation, parse.
  const requestMs = reply.elapsedTime;
  // The client going away takes its request out of the queue. 'close' fires once per response, and
  // cancel does nothing once the request left the queue, so the listener is never removed (removing
  // it searched the emitter's list on every request).
  const raw = reply.raw;
  raw.on('close', () => {
    if (!raw.writableFinished) batcher.cancel(pending);
  });
  const out = await pending.promise;
  if (out.error !== undefined) {
    repo.metrics?.request(name, ver, tenant.name, out.queueUs, out.error.code);
    v.stats.request(performance.now() - t0, true);
    if (out.batchSize > 0) void reply.header('x-tandem-batch-size', String(out.batchSize));
    return sendError(reply, out.error);
  }
  const s0 = performance.now();
  const answer = { model: name, version: ver, outputs: out.output };
  let binary: ReturnType<typeof binaryAnswer> | undefined;
  let body: string | Buffer;
  try {
    binary = req.body.binaryOutputs === true ? binaryAnswer(answer) : undefined;
    body = binary ? binary.body : JSON.stringify(answer);
  } catch (e) {
    // An output JSON cannot carry (tensor-values.ts: NaN or ±Inf as numbers): this answer fails alone.
    if (!(e instanceof TandemError)) throw e;
    repo.metrics?.request(name, ver, tenant.name, out.queueUs, e.code);
    v.stats.request(performance.now() - t0, true);
    return sendError(reply.header('x-tandem-batch-size', String(out.batchSize)), e);
  }
  const serializeMs = performance.now() - s0;
  repo.metrics?.request(name, ver, tenant.name, out.queueUs, null);
  v.stats.request(performance.now() - t0, false);
  if (binary) void reply.header(HEADER_LENGTH, String(binary.headerLength));
  // Hot until the window after this answer: the client's next request is read without a wake-up.
  repo.hotLoop.touch();
  return reply
    .header(
      'server-timing',
      `queue;dur=${(out.queueUs / 1000).toFixed(3)}, compute;dur=${(out.computeUs / 1000).toFixed(3)}, serialize;dur=${serializeMs.toFixed(3)}, request;dur=${requestMs.toFixed(3)}`,
    )
    .header('x-tandem-batch-size', String(out.batchSize))
    .type(binary ? BINARY_CONTENT_TYPE : 'application/json')
    .send(body);
}

/**
 * Once an infer request is answered its binary body (if any) is free for another request: every item
 * view into it was copied when its batch ran, and the request's batch has run or it never will.
 */
function answered(req: FastifyRequest, reply: Promise<FastifyReply>): Promise<FastifyReply> {
  return reply.finally(() => releaseBody(req.raw));
}

export function modelRoutes(repo: ModelRepository) {
  return async function (app: FastifyInstance): Promise<void> {
    app.addHook('onClose', async () => repo.close());
    // Weights arrive as a raw stream (application/octet-stream), written to disk as they come.
    app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));

    app.post<{ Body: RegisterBody }>(
      '/v1/models',
      {
        schema: {
          operationId: 'registerModel',
          summary: 'Register and load a model version',
          description:
            "Weights from the config's seed (built in), a finished train job's last checkpoint (fromJob) or an upload. " +
            'A weights file that is not valid or does not match the config: 422 TANDEM_ERR_BAD_CHECKPOINT.',
          tags: ['models'],
          body: REGISTER_BODY,
          response: { 201: { ...VERSION_SCHEMA, description: 'registered and loaded' } },
        },
      },
      async (req, reply) => {
        const config = checkConfig(repo, req, req.body);
        const view = await repo.register(tenantOf(req), { ...req.body, config });
        return reply.code(201).send(view);
      },
    );

    app.post(
      '/v1/models/uploads',
      {
        bodyLimit: MAX_UPLOAD_BYTES,
        schema: {
          operationId: 'uploadModelWeights',
          summary: 'Upload a weights file (safetensors, or .onnx) for a later registration',
          description: `The body is the file itself (application/octet-stream, at most ${MAX_UPLOAD_BYTES} bytes), streamed to disk.`,
          tags: ['models'],
          consumes: ['application/octet-stream'],
          response: { 201: { ...UPLOAD_SCHEMA, description: 'stored; register it with {upload}' } },
        },
      },
      async (req, reply) => {
        tenantOf(req);
        if (typeof (req.body as Readable | undefined)?.pipe !== 'function')
          throw new TandemError('TANDEM_ERR_MALFORMED_REQUEST', 'send the file as application/octet-stream');
        const saved = await repo.uploads.saveUpload(req.body as Readable, MAX_UPLOAD_BYTES);
        return reply.code(201).send(saved);
      },
    );

    app.get(
      '/v1/models',
      {
        schema: {
          operationId: 'listModels',
          summary: 'Registered models with their versions, state, batching, placement and live figures',
          tags: ['models'],
          response: { 200: MODEL_LIST_SCHEMA },
        },
      },
      async () => ({ models: repo.list() }),
    );

    app.get(
      '/v1/model-kinds',
      {
        schema: {
          operationId: 'listModelKinds',
          summary: 'The model kinds that can be registered, with their config schemas',
          tags: ['models'],
          response: { 200: KINDS_SCHEMA },
        },
      },
      async () => ({
        kinds: repo.kinds.map((f) => ({ kind: f.kind, description: f.description, config: f.configSchema })),
      }),
    );

    app.get<{ Params: { name: string } }>(
      '/v1/models/:name',
      {
        schema: {
          operationId: 'getModel',
          summary:
            "A model's versions: state, batching, placement, weight bytes, input/output schemas, figures",
          tags: ['models'],
          params: MODEL_PARAMS,
          response: { 200: MODEL_SCHEMA },
        },
      },
      async (req) => repo.describe(req.params.name),
    );

    app.delete<{ Params: { name: string } }>(
      '/v1/models/:name',
      {
        schema: {
          operationId: 'unloadModel',
          summary: 'Unload every version of a model (queued requests get 503)',
          tags: ['models'],
          params: MODEL_PARAMS,
          response: { 200: UNLOAD_SCHEMA },
        },
      },
      async (req) => repo.unload(tenantOf(req), req.params.name),
    );

    app.delete<{ Params: { name: string; version: string } }>(
      '/v1/models/:name/versions/:version',
      {
        schema: {
          operationId: 'unloadModelVersion',
          summary: 'Unload one version of a model',
          tags: ['models'],
          params: VERSION_PARAMS,
          response: { 200: UNLOAD_SCHEMA },
        },
      },
      async (req) => repo.unload(tenantOf(req), req.params.name, Number(req.params.version)),
    );

    const inferSchema = (operationId: string, params: object) => ({
      operationId,
      summary: 'Run one request through the model’s dynamic batcher (nothing is stored)',
      description:
        'Answers when its batch has run, with Server-Timing (queue, compute, serialize, and request: from arrival until queued) and x-tandem-batch-size. ' +
        '429 TANDEM_ERR_OVERLOADED with Retry-After when the queue is full; 504 TANDEM_ERR_DEADLINE_EXCEEDED when ' +
        'timeoutMs passed before its batch started.',
      tags: ['models'],
      params,
      body: INFER_BODY,
      response: { 200: INFER_ANSWER },
    });
    // The infer routes in their own scope: there an octet-stream body is a binary tensor request
    // (binary-tensors.ts), read whole under the route's body limit, not the uploads' raw stream.
    await app.register(async (scope) => {
      scope.removeContentTypeParser(BINARY_CONTENT_TYPE);
      scope.addContentTypeParser(BINARY_CONTENT_TYPE, (req, payload, done) => {
        readBinaryBody(req.raw, payload, req.routeOptions.bodyLimit ?? MAX_INFER_BODY_BYTES, (err, body) => {
          if (err) return done(err, undefined);
          holdBody(req.raw, body!);
          try {
            done(null, parseBinaryBody(body!, req.headers[HEADER_LENGTH]));
          } catch (e) {
            releaseBody(req.raw);
            done(e as Error, undefined);
          }
        });
      });
      scope.post<{ Params: { name: string }; Body: InferBody }>(
        '/v1/models/:name/infer',
        { schema: inferSchema('inferModel', MODEL_PARAMS), bodyLimit: MAX_INFER_BODY_BYTES },
        (req, reply) => answered(req, infer(repo, req, reply, req.params.name, undefined)),
      );
      scope.post<{ Params: { name: string; version: string }; Body: InferBody }>(
        '/v1/models/:name/versions/:version/infer',
        { schema: inferSchema('inferModelVersion', VERSION_PARAMS), bodyLimit: MAX_INFER_BODY_BYTES },
        (req, reply) => answered(req, infer(repo, req, reply, req.params.name, Number(req.params.version))),
      );
    });
  };
}
