/**
 * `tandem submit | jobs | status | cancel | trace | keys`: clients of a running service (--url, --key
 * or TANDEM_URL / TANDEM_KEY); `serve` itself is in serve-command.ts. Every command takes --json.
 * The options come parsed and range-checked by commander (program-service.ts).
 */
import { writeFileSync } from 'node:fs';
import { TandemError } from '../core/errors.js';
import { suggestion } from './cli-options.js';
import { outputFile, print, table } from './output.js';
import { withProgress } from './progress.js';
import { ServiceClient, clientConfig, parseParams } from './service-client.js';

/** What every client command takes (commander fills url/key from TANDEM_URL/TANDEM_KEY too). */
export interface ClientOptions {
  readonly url?: string;
  readonly key?: string;
  readonly json?: boolean;
}

interface JobView {
  id: string;
  type: string;
  tenant: string;
  state: string;
  priority: number;
  progress: number;
  message?: string;
  device?: string | null;
  createdAt: string;
  waitSeconds?: number | null;
  runSeconds?: number | null;
  error?: { code: string; message: string } | null;
  params?: Record<string, unknown>;
}

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

function client(opts: ClientOptions): ServiceClient {
  return new ServiceClient(clientConfig({ url: opts.url, key: opts.key }));
}

const secs = (v: number | null | undefined): string =>
  v === null || v === undefined ? '-' : `${v.toFixed(2)}s`;

function bar(progress: number, width = 30): string {
  const full = Math.round(progress * width);
  return `[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${(progress * 100).toFixed(0).padStart(3)}%`;
}

/** Polls the job to its end, drawing its progress as a bar on a terminal (progress.ts). */
async function waitForJob(c: ServiceClient, id: string, json: boolean): Promise<JobView> {
  return withProgress(id, { json }, async (p) => {
    for (;;) {
      const job = await c.request<JobView>('GET', `/v1/jobs/${encodeURIComponent(id)}`);
      p.update(job.progress, `${job.state}${job.message ? ` ${job.message}` : ''}`);
      if (FINAL.has(job.state)) return job;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
}

/** An unknown job type answered with the closest known one (the service sends the list). */
function withTypeSuggestion(e: unknown, type: string): unknown {
  if (!(e instanceof TandemError) || e.code !== 'TANDEM_ERR_UNKNOWN_JOB_TYPE') return e;
  const known = e.details['known'];
  if (!Array.isArray(known) || !known.every((k): k is string => typeof k === 'string')) return e;
  return new TandemError(
    'TANDEM_ERR_UNKNOWN_JOB_TYPE',
    `unknown job type ${JSON.stringify(type)}${suggestion(type, known)}`,
    e.details,
  );
}

export interface SubmitOptions extends ClientOptions {
  readonly param?: string[];
  readonly params?: string;
  readonly priority?: number;
  readonly idempotencyKey?: string;
  readonly wait?: boolean;
}

export async function submitCommand(type: string, opts: SubmitOptions): Promise<number> {
  const json = opts.json === true;
  const c = client(opts);
  const body: Record<string, unknown> = { type, params: parseParams(opts.param ?? [], opts.params) };
  if (opts.priority !== undefined) body['priority'] = opts.priority;
  if (opts.idempotencyKey !== undefined) body['idempotencyKey'] = opts.idempotencyKey;
  const job = await c.request<JobView>('POST', '/v1/jobs', body).catch((e: unknown) => {
    throw withTypeSuggestion(e, type);
  });
  if (!opts.wait) {
    print(json, job, () => `${job.id} ${job.state}`);
    return 0;
  }
  if (!json) process.stderr.write(`${job.id} submitted\n`);
  const done = await waitForJob(c, job.id, json);
  const result =
    done.state === 'succeeded'
      ? (await c.request<{ result: unknown }>('GET', `/v1/jobs/${job.id}/result`)).result
      : null;
  print(json, { job: done, result }, () =>
    done.state === 'succeeded'
      ? `${done.id} succeeded in ${secs(done.runSeconds)} (waited ${secs(done.waitSeconds)})\n${JSON.stringify(result, null, 2)}`
      : `${done.id} ${done.state}: ${done.error?.code ?? ''} ${done.error?.message ?? ''}`,
  );
  return done.state === 'succeeded' ? 0 : 1;
}

export interface JobsOptions extends ClientOptions {
  readonly state?: string;
  readonly limit: number;
  readonly tenant?: string;
}

export async function jobsCommand(opts: JobsOptions): Promise<number> {
  const q = new URLSearchParams();
  if (opts.state !== undefined) q.set('state', opts.state);
  q.set('limit', String(opts.limit));
  if (opts.tenant !== undefined) q.set('tenant', opts.tenant);
  const { jobs } = await client(opts).request<{ jobs: JobView[] }>('GET', `/v1/jobs?${q.toString()}`);
  print(opts.json === true, jobs, () =>
    jobs.length === 0
      ? 'no jobs'
      : table([
          ['ID', 'TYPE', 'TENANT', 'STATE', 'PROGRESS', 'DEVICE', 'WAIT', 'RUN', 'SUBMITTED'],
          ...jobs.map((j) => [
            j.id,
            j.type,
            j.tenant,
            j.state,
            `${(j.progress * 100).toFixed(0)}%`,
            j.device ?? '-',
            secs(j.waitSeconds),
            secs(j.runSeconds),
            j.createdAt,
          ]),
        ]),
  );
  return 0;
}

export async function statusCommand(id: string, opts: ClientOptions): Promise<number> {
  const job = await client(opts).request<JobView>('GET', `/v1/jobs/${encodeURIComponent(id)}`);
  print(opts.json === true, job, () =>
    [
      `${job.id}  ${job.type}  ${job.state}  ${bar(job.progress, 20)}${job.message ? `  ${job.message}` : ''}`,
      `tenant ${job.tenant}, priority ${job.priority}, device ${job.device ?? '-'}, waited ${secs(job.waitSeconds)}, ran ${secs(job.runSeconds)}`,
      `params ${JSON.stringify(job.params ?? {})}`,
      ...(job.error ? [`error ${job.error.code}: ${job.error.message}`] : []),
    ].join('\n'),
  );
  return 0;
}

export async function cancelCommand(id: string, opts: ClientOptions): Promise<number> {
  const r = await client(opts).request<{ outcome: string; job: JobView }>(
    'POST',
    `/v1/jobs/${encodeURIComponent(id)}/cancel`,
  );
  print(opts.json === true, r, () =>
    r.outcome === 'final' ? `${r.job.id} already ${r.job.state}` : `${r.job.id} ${r.outcome}`,
  );
  return 0;
}

/** `tandem trace <id> [-o file]`: without -o the file goes to .tandem/traces/<id>.trace.json. */
export async function traceCommand(id: string, opts: ClientOptions & { output?: string }): Promise<number> {
  const trace = await client(opts).request<{ traceEvents: unknown[] }>(
    'GET',
    `/v1/jobs/${encodeURIComponent(id)}/trace`,
  );
  const file = outputFile(opts.output, `${id.replace(/[^A-Za-z0-9_.-]/g, '_')}.trace.json`);
  writeFileSync(file, JSON.stringify(trace));
  print(
    opts.json === true,
    { file, events: trace.traceEvents.length },
    () => `${file}: ${trace.traceEvents.length} events (open in https://ui.perfetto.dev)`,
  );
  return 0;
}

export interface KeyCreateOptions extends ClientOptions {
  readonly role?: string;
  readonly weight?: number;
  readonly maxJobs?: number;
  readonly maxMemory?: number;
  readonly maxQueued?: number;
  /** Longest `timeoutSeconds` the tenant's jobs may ask for. */
  readonly maxTimeout?: number;
  readonly label?: string;
}

/** `tandem keys list`. */
export async function keysListCommand(opts: ClientOptions): Promise<number> {
  const c = client(opts);
  const json = opts.json === true;
  const { tenants } = await c.request<{
    tenants: {
      name: string;
      role: string;
      weight: number;
      maxConcurrentJobs: number;
      maxDeviceMemoryBytes: number;
    }[];
  }>('GET', '/v1/tenants');
  print(json, tenants, () =>
    table([
      ['TENANT', 'ROLE', 'WEIGHT', 'MAX JOBS', 'MAX MEMORY'],
      ...tenants.map((t) => [
        t.name,
        t.role,
        String(t.weight),
        String(t.maxConcurrentJobs),
        String(t.maxDeviceMemoryBytes),
      ]),
    ]),
  );
  return 0;
}

/** `tandem keys revoke <key id>`. */
export async function keysRevokeCommand(keyId: string, opts: ClientOptions): Promise<number> {
  const r = await client(opts).request<{ revoked: boolean }>(
    'DELETE',
    `/v1/keys/${encodeURIComponent(keyId)}`,
  );
  print(opts.json === true, r, () => `key ${keyId} revoked`);
  return 0;
}

/** `tandem keys create <tenant>`: a new tenant with its first key, or another key of an existing one. */
export async function keysCreateCommand(name: string, opts: KeyCreateOptions): Promise<number> {
  const c = client(opts);
  const json = opts.json === true;
  const { tenants } = await c.request<{ tenants: { name: string }[] }>('GET', '/v1/tenants');
  let created: { key: string; keyId: string; tenant: { name: string; role: string } };
  if (tenants.some((t) => t.name === name)) {
    created = await c.request('POST', `/v1/tenants/${encodeURIComponent(name)}/keys`, {
      label: opts.label ?? '',
    });
  } else {
    const body: Record<string, unknown> = { name };
    if (opts.role !== undefined) body['role'] = opts.role;
    if (opts.weight !== undefined) body['weight'] = opts.weight;
    if (opts.maxJobs !== undefined) body['maxConcurrentJobs'] = opts.maxJobs;
    if (opts.maxMemory !== undefined) body['maxDeviceMemoryBytes'] = opts.maxMemory;
    if (opts.maxQueued !== undefined) body['maxQueuedJobs'] = opts.maxQueued;
    if (opts.maxTimeout !== undefined) body['maxTimeoutSeconds'] = opts.maxTimeout;
    if (opts.label !== undefined) body['keyLabel'] = opts.label;
    created = await c.request('POST', '/v1/tenants', body);
  }
  print(
    json,
    created,
    () =>
      `tenant ${created.tenant.name} (${created.tenant.role}) key ${created.keyId}:\n  ${created.key}\n(shown once; store it now)`,
  );
  return 0;
}
