/**
 * The CLI's HTTP client of the service. Where to connect and which key to use come from --url/--key
 * or, once, from TANDEM_URL/TANDEM_KEY; API errors come back as the same TandemError codes.
 */
import { ERROR_CATALOGUE, TandemError, type ErrorCode } from '../core/errors.js';

export interface ClientConfig {
  readonly url: string;
  readonly key: string | null;
  /** Each request (answer and body) within this long, or TANDEM_ERR_UNAVAILABLE; default 30 s. */
  readonly timeoutMs?: number;
}

/** A service that accepts the connection but never answers must not hang the CLI. */
const DEFAULT_TIMEOUT_MS = 30_000;

export function clientConfig(
  values: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ClientConfig {
  // An empty value (`TANDEM_URL=`) counts as not set.
  const given = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const url = given(values['url']) ?? given(env['TANDEM_URL']) ?? 'http://127.0.0.1:8080';
  const key = given(values['key']) ?? given(env['TANDEM_KEY']) ?? null;
  return { url: url.replace(/\/+$/, ''), key };
}

export class ServiceClient {
  constructor(private readonly cfg: ClientConfig) {}

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const res = await this.raw(method, path, body, headers);
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw new TandemError(
        'TANDEM_ERR_UNAVAILABLE',
        `${method} ${path}: the answer from ${this.cfg.url} broke off (${e instanceof Error ? e.message : String(e)})`,
      );
    }
    let json: unknown;
    try {
      json = text.length ? JSON.parse(text) : null;
    } catch {
      throw new TandemError(
        'TANDEM_ERR_UNAVAILABLE',
        `${method} ${path}: the service answered ${res.status} with non-JSON`,
      );
    }
    if (!res.ok) {
      const e = (
        json as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | null
      )?.error;
      const code = (e?.code && e.code in ERROR_CATALOGUE ? e.code : 'TANDEM_ERR_INTERNAL') as ErrorCode;
      throw new TandemError(code, e?.message ?? `HTTP ${res.status}`, e?.details ?? {});
    }
    return json as T;
  }

  async raw(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const h: Record<string, string> = { ...headers };
    if (this.cfg.key) h['authorization'] = `Bearer ${this.cfg.key}`;
    // Bytes (a binary infer body) go as they are, with the caller's content-type.
    const bytes = body instanceof Uint8Array;
    if (body !== undefined && !bytes) h['content-type'] = 'application/json';
    const timeoutMs = this.cfg.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    try {
      return await fetch(`${this.cfg.url}${path}`, {
        method,
        headers: h,
        signal: AbortSignal.timeout(timeoutMs),
        ...(body !== undefined ? { body: bytes ? body : JSON.stringify(body) } : {}),
      });
    } catch (e) {
      if (e instanceof Error && e.name === 'TimeoutError')
        throw new TandemError(
          'TANDEM_ERR_UNAVAILABLE',
          `${method} ${path}: no answer from the service at ${this.cfg.url} within ${timeoutMs / 1000} s`,
        );
      throw new TandemError(
        'TANDEM_ERR_UNAVAILABLE',
        `cannot reach the service at ${this.cfg.url} (${e instanceof Error ? e.message : String(e)}); start it with \`tandem serve\` or set --url / TANDEM_URL`,
      );
    }
  }
}

/** `--param n=512 --param dtype=f16`: numbers and booleans become JSON numbers and booleans. */
export function parseParams(pairs: readonly string[], json: string | undefined): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  if (json !== undefined) {
    try {
      const v = JSON.parse(json) as unknown;
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
      out = v as Record<string, unknown>;
    } catch (e) {
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `--params must be a JSON object: ${(e as Error).message}`,
      );
    }
  }
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `--param ${p}: expected key=value`);
    const k = p.slice(0, eq);
    const raw = p.slice(eq + 1);
    out[k] =
      raw === 'true'
        ? true
        : raw === 'false'
          ? false
          : raw !== '' && Number.isFinite(Number(raw))
            ? Number(raw)
            : raw;
  }
  return out;
}
