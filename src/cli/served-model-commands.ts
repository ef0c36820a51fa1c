/**
 * `tandem models list | register | unload` and `tandem infer`: clients of a running service's
 * interactive lane (docs/serving.md). A weights file is uploaded as a stream, then registered.
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { TandemError, type ErrorCode } from '../core/errors.js';
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
}

export interface UnloadOptions extends ClientOptions {
  readonly modelVersion?: number;
}

export interface InferOptions extends ClientOptions {
  readonly input: string;
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

export async function inferCommand(model: string, opts: InferOptions): Promise<number> {
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
  const path = `/v1/models/${encodeURIComponent(model)}${opts.modelVersion === undefined ? '' : `/versions/${opts.modelVersion}`}/infer`;
  const c = client(opts);
  const res = await c.raw('POST', path, {
    inputs,
    ...(opts.priority === undefined ? {} : { priority: opts.priority }),
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  });
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
