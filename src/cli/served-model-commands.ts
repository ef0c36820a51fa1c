/**
 * `tandem models list | register | unload` and `tandem infer`: clients of a running service's
 * interactive lane (docs/serving.md). A weights file is uploaded as a stream, then registered.
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { TandemError, type ErrorCode } from '../core/errors.js';
import { binaryInferBody, type BinaryTensor } from '../service/client/binary-request.js';
import { decodeImageFile } from './image-file.js';
import { readNpyFile } from './npy-file.js';
import { print, table } from './output.js';
import { ServiceClient, clientConfig } from './service-client.js';

export interface ClientOptions {
  readonly url?: string;
  readonly key?: string;
  readonly json?: boolean;
}

export interface RegisterOptions extends ClientOptions {
  readonly kind: string;
  readonly modelVersion?: number;
  readonly config?: string;
  readonly fromJob?: string;
  readonly weights?: string;
  readonly placement?: string;
  readonly preferIdle?: boolean;
  readonly batching?: string;
  readonly warmup?: string;
}

export interface UnloadOptions extends ClientOptions {
  readonly modelVersion?: number;
}

export interface InferOptions extends ClientOptions {
  /** Exactly one of input (a JSON file), image (PNG/JPEG) and tensor (.npy). */
  readonly input?: string;
  readonly image?: string;
  readonly tensor?: string;
  /** The graph input --image or --tensor feeds (default: the preprocess input, or the only input). */
  readonly inputName?: string;
  readonly modelVersion?: number;
  readonly priority?: number;
  readonly timeoutMs?: number;
}

interface VersionView {
  name: string;
  version: number;
  kind: string;
  state: string;
  error: { code: string; message: string } | null;
  placement: { kinds: string[]; preferIdle?: boolean };
  batching: { maxBatchSize: number; maxQueueDelayUs: number; instances: number };
  weightBytes: number | null;
  stats: { requests: number; throughput: number; meanBatchSize: number; p99Ms: number | null };
}

function client(opts: ClientOptions): ServiceClient {
  return new ServiceClient(clientConfig({ url: opts.url, key: opts.key }));
}

function jsonObject(text: string | undefined, flag: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${flag} must be a JSON object: ${(e as Error).message}`,
    );
  }
}

export async function modelsListCommand(opts: ClientOptions): Promise<number> {
  const r = await client(opts).request<{ models: { name: string; versions: VersionView[] }[] }>(
    'GET',
    '/v1/models',
  );
  print(opts.json === true, r, () => {
    if (r.models.length === 0) return 'no models (tandem models register <name> --kind mlp)';
    const rows = [
      [
        'MODEL',
        'VERSION',
        'KIND',
        'STATE',
        'PLACEMENT',
        'BATCH',
        'DELAY',
        'REQUESTS',
        'REQ/S',
        'MEAN BATCH',
        'P99',
      ],
    ];
    for (const m of r.models)
      for (const v of m.versions)
        rows.push([
          m.name,
          String(v.version),
          v.kind,
          v.error ? `${v.state} (${v.error.code})` : v.state,
          `${v.placement.kinds.join(',')}${v.placement.preferIdle ? ' idle-first' : ''}`,
          `≤${v.batching.maxBatchSize}×${v.batching.instances}`,
          `${v.batching.maxQueueDelayUs}µs`,
          String(v.stats.requests),
          v.stats.throughput.toFixed(1),
          v.stats.meanBatchSize.toFixed(1),
          v.stats.p99Ms === null ? '-' : `${v.stats.p99Ms.toFixed(2)}ms`,
        ]);
    return table(rows);
  });
  return 0;
}

export async function modelsRegisterCommand(name: string, opts: RegisterOptions): Promise<number> {
  const c = client(opts);
  const upload = opts.weights === undefined ? undefined : await uploadFile(opts, opts.weights);
  const body = {
    name,
    kind: opts.kind,
    ...(opts.modelVersion === undefined ? {} : { version: opts.modelVersion }),
    ...(opts.config === undefined ? {} : { config: jsonObject(opts.config, '--config') }),
    ...(opts.fromJob === undefined ? {} : { fromJob: opts.fromJob }),
    ...(upload === undefined ? {} : { upload }),
    ...(opts.placement === undefined
      ? {}
      : { placement: { kinds: opts.placement.split(','), preferIdle: opts.preferIdle === true } }),
    ...(opts.batching === undefined ? {} : { batching: jsonObject(opts.batching, '--batching') }),
    ...(opts.warmup === undefined ? {} : { warmup: jsonObject(opts.warmup, '--warmup') }),
  };
  const v = await c.request<VersionView>('POST', '/v1/models', body);
  print(
    opts.json === true,
    v,
    () => `${v.name} version ${v.version} (${v.kind}) ${v.state}, ${v.weightBytes ?? 0} bytes of weights`,
  );
  return 0;
}

/**
 * The size of the file `--weights` names, checked before anything is sent: a missing file was an
 * internal error (a bare ENOENT), and a directory read as a stream failed the fetch, which told the user
 * the service could not be reached.
 */
function weightsFileSize(file: string): number {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `--weights ${file}: ${code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (e as Error).message})`}`,
    );
  }
  if (!st.isFile())
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `--weights ${file}: ${st.isDirectory() ? 'is a directory' : 'is not a regular file'}; give the .safetensors or .onnx file`,
    );
  return st.size;
}

/** Streams a weights file to POST /v1/models/uploads; returns the upload id. */
async function uploadFile(opts: ClientOptions, file: string): Promise<string> {
  const cfg = clientConfig({ url: opts.url, key: opts.key });
  const size = weightsFileSize(file);
  let res: Response;
  try {
    res = await fetch(`${cfg.url}/v1/models/uploads`, {
      method: 'POST',
      headers: {
        'content-type': 'application/octet-stream',
        'content-length': String(size),
        ...(cfg.key ? { authorization: `Bearer ${cfg.key}` } : {}),
      },
      body: Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
  } catch (e) {
    throw new TandemError(
      'TANDEM_ERR_UNAVAILABLE',
      `cannot reach the service at ${cfg.url}: ${(e as Error).message}`,
    );
  }
  // A proxy's HTML error page is not JSON: its status still says what happened.
  const answer = (await res.json().catch(() => ({}))) as {
    upload?: string;
    error?: { code: string; message: string };
  };
  if (!res.ok || answer.upload === undefined)
    throw new TandemError(
      (answer.error?.code ?? 'TANDEM_ERR_INTERNAL') as ErrorCode,
      `uploading ${file}: ${answer.error?.message ?? `HTTP ${res.status}`}`,
    );
  return answer.upload;
}

export async function modelsUnloadCommand(name: string, opts: UnloadOptions): Promise<number> {
  const path = `/v1/models/${encodeURIComponent(name)}${opts.modelVersion === undefined ? '' : `/versions/${opts.modelVersion}`}`;
  const r = await client(opts).request<{ name: string; unloaded: number[] }>('DELETE', path);
  print(opts.json === true, r, () => `${r.name}: unloaded version ${r.unloaded.join(', ')}`);
  return 0;
}

/** What GET /v1/models/{name} says of a version, as far as --image and --tensor need it. */
interface ModelInputsView {
  versions: Array<{
    version: number;
    state: string;
    config: { preprocess?: { input?: string } };
    inputSchema: { required?: string[] } | null;
  }>;
}

/**
 * The graph input that --image or --tensor feeds: --input-name, else (an image) the model's preprocess
 * input, else its only input. An image for a model without a preprocess config is refused here, before
 * the pixels are sent, with what to do about it.
 */
async function feedName(c: ServiceClient, model: string, opts: InferOptions): Promise<string> {
  const m = await c.request<ModelInputsView>('GET', `/v1/models/${encodeURIComponent(model)}`);
  const v =
    opts.modelVersion === undefined
      ? [...m.versions].reverse().find((x) => x.state !== 'failed')
      : m.versions.find((x) => x.version === opts.modelVersion);
  if (!v) throw new TandemError('TANDEM_ERR_NOT_FOUND', `model ${model} has no such version`);
  const pre = v.config.preprocess?.input;
  if (opts.image !== undefined && pre === undefined)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `--image: model ${model} version ${v.version} takes no images (its config has no preprocess); register it with --config '{"preprocess":{"input":"x","mean":[…],"std":[…]}}', or send the normalized float32 tensor with --tensor`,
    );
  if (opts.inputName !== undefined) return opts.inputName;
  if (pre !== undefined) return pre;
  const names = v.inputSchema?.required ?? [];
  if (names.length !== 1)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `--tensor: model ${model} has inputs ${names.join(', ') || '(unknown)'}; name one with --input-name`,
    );
  return names[0]!;
}

/** The request's body: JSON (--input), or binary with one tensor from --image or --tensor. */
async function inferBody(
  c: ServiceClient,
  model: string,
  opts: InferOptions,
): Promise<{ body: unknown; headers: Record<string, string> }> {
  const given = [opts.input, opts.image, opts.tensor].filter((x) => x !== undefined).length;
  if (given !== 1)
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', 'give exactly one of --input, --image and --tensor');
  const extra = {
    ...(opts.priority === undefined ? {} : { priority: opts.priority }),
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  };
  if (opts.input === undefined) {
    let tensor: BinaryTensor;
    if (opts.image !== undefined) {
      const px = await decodeImageFile(opts.image);
      tensor = { shape: [px.height, px.width, 3], dtype: 'uint8', bytes: px.data };
    } else tensor = readNpyFile(opts.tensor!);
    const { body, headers } = binaryInferBody({ [await feedName(c, model, opts)]: tensor }, extra);
    return { body, headers };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(opts.input === '-' ? 0 : opts.input, 'utf8')) as unknown;
  } catch (e) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--input ${opts.input}: ${(e as Error).message}`);
  }
  const inputs =
    parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && 'inputs' in parsed
      ? (parsed as { inputs: unknown }).inputs
      : parsed;
  return { body: { inputs, ...extra }, headers: {} };
}

export async function inferCommand(model: string, opts: InferOptions): Promise<number> {
  const path = `/v1/models/${encodeURIComponent(model)}${opts.modelVersion === undefined ? '' : `/versions/${opts.modelVersion}`}/infer`;
  const c = client(opts);
  const { body, headers } = await inferBody(c, model, opts);
  const res = await c.raw('POST', path, body, headers);
  const text = await res.text();
  const answer = JSON.parse(text) as {
    outputs?: unknown;
    version?: number;
    error?: { code: string; message: string; details?: Record<string, unknown> };
  };
  if (!res.ok) {
    const e = answer.error;
    throw new TandemError(
      (e?.code ?? 'TANDEM_ERR_INTERNAL') as ErrorCode,
      e?.message ?? `HTTP ${res.status}`,
      e?.details ?? {},
    );
  }
  const timing = res.headers.get('server-timing') ?? '';
  const batch = res.headers.get('x-tandem-batch-size') ?? '?';
  print(opts.json === true, { ...answer, serverTiming: timing, batchSize: Number(batch) }, () =>
    [
      `${model} version ${answer.version ?? '?'} (batch of ${batch}; ${timing})`,
      JSON.stringify(answer.outputs),
    ].join('\n'),
  );
  return 0;
}
