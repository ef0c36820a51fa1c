/** Helpers of the interactive lane's tests: register a model, infer, read the Server-Timing split. */
import assert from 'node:assert/strict';
import type { TestService } from './helpers.js';

export interface InjectAnswer {
  readonly statusCode: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | number | undefined>;
  json(): unknown;
}

export async function registerModel(
  s: TestService,
  body: Record<string, unknown>,
  key = s.admin,
): Promise<InjectAnswer> {
  return (await s.svc.app.inject({
    method: 'POST',
    url: '/v1/models',
    headers: s.auth(key),
    payload: body,
  })) as InjectAnswer;
}

/** Uploads a model file (`POST /v1/models/uploads`); returns the upload id a registration names. */
export async function uploadModelFile(s: TestService, bytes: Uint8Array): Promise<string> {
  const res = await s.svc.app.inject({
    method: 'POST',
    url: '/v1/models/uploads',
    headers: { ...s.auth(), 'content-type': 'application/octet-stream' },
    payload: Buffer.from(bytes),
  });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { upload: string }).upload;
}

export async function mustRegister(
  s: TestService,
  body: Record<string, unknown>,
): Promise<{ version: number }> {
  const res = await registerModel(s, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { version: number };
}

export async function infer(
  s: TestService,
  name: string,
  body: Record<string, unknown>,
  version?: number,
): Promise<InjectAnswer> {
  const url =
    version === undefined ? `/v1/models/${name}/infer` : `/v1/models/${name}/versions/${version}/infer`;
  return (await s.svc.app.inject({ method: 'POST', url, headers: s.auth(), payload: body })) as InjectAnswer;
}

/** 784 pseudo-random pixels in [0, 1) from `seed`. */
export function randomImage(seed: number): number[] {
  let x = (seed * 2654435761) >>> 0 || 1;
  return Array.from({ length: 784 }, () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return (x % 10_000) / 10_000;
  });
}

/** The Server-Timing durations in ms: { queue, compute, serialize }. */
export function serverTiming(res: InjectAnswer): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of String(res.headers['server-timing'] ?? '').split(',')) {
    const m = /^\s*(\w+);dur=([\d.]+)/.exec(part);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

export function batchSize(res: InjectAnswer): number {
  return Number(res.headers['x-tandem-batch-size'] ?? 0);
}

export function errorCode(res: InjectAnswer): string {
  return (res.json() as { error: { code: string } }).error.code;
}
