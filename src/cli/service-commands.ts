/**
 * `tandem submit | jobs | status | cancel | trace | keys`: clients of a running service (--url, --key
 * or TANDEM_URL / TANDEM_KEY); `serve` itself is in serve-command.ts. Every command takes --json.
 */
import { writeFileSync } from 'node:fs';
import { TandemError } from '../core/errors.js';
import { intOption, parse, print, table, type Command, type Options } from './output.js';
import { serveCommand } from './serve-command.js';
import { ServiceClient, clientConfig, parseParams } from './service-client.js';

const CLIENT_OPTIONS: Options = { url: { type: 'string' }, key: { type: 'string' } };

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

function client(values: Record<string, unknown>): ServiceClient {
  return new ServiceClient(clientConfig(values));
}

function needId(positionals: string[], cmd: string): string {
  const id = positionals[0];
  if (!id) throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', `usage: tandem ${cmd} <job id>`);
  return id;
}

const secs = (v: number | null | undefined): string =>
  v === null || v === undefined ? '-' : `${v.toFixed(2)}s`;

function bar(progress: number, width = 30): string {
  const full = Math.round(progress * width);
  return `[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${(progress * 100).toFixed(0).padStart(3)}%`;
}

async function waitForJob(c: ServiceClient, id: string, json: boolean): Promise<JobView> {
  const tty = process.stderr.isTTY && !json;
  let last = '';
  for (;;) {
    const job = await c.request<JobView>('GET', `/v1/jobs/${id}`);
    const line = `${bar(job.progress)} ${job.state}${job.message ? ` ${job.message}` : ''}`;
    if (!json && line !== last) {
      process.stderr.write(tty ? `\r${line.padEnd(last.length)}` : `${line}\n`);
      last = line;
    }
    if (FINAL.has(job.state)) {
      if (tty) process.stderr.write('\n');
      return job;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const submitCommand: Command = async (argv) => {
  const { values, positionals } = parse(argv, {
    ...CLIENT_OPTIONS,
    param: { type: 'string', multiple: true, short: 'p' },
    params: { type: 'string' },
    priority: { type: 'string' },
    'idempotency-key': { type: 'string' },
    wait: { type: 'boolean', short: 'w' },
  });
  const type = positionals[0];
  if (!type)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'usage: tandem submit <type> [--param k=v ...] [--wait]',
    );
  const json = values['json'] === true;
  const c = client(values);
  const body: Record<string, unknown> = {
    type,
    params: parseParams(
      (values['param'] as string[] | undefined) ?? [],
      values['params'] as string | undefined,
    ),
  };
  if (values['priority'] !== undefined)
    body['priority'] = intOption(values['priority'], 'priority', 0, -100, 100);
  if (typeof values['idempotency-key'] === 'string') body['idempotencyKey'] = values['idempotency-key'];
  const job = await c.request<JobView>('POST', '/v1/jobs', body);
  if (!values['wait']) {
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
};

export const jobsCommand: Command = async (argv) => {
  const { values } = parse(argv, {
    ...CLIENT_OPTIONS,
    state: { type: 'string' },
    limit: { type: 'string' },
    tenant: { type: 'string' },
  });
  const q = new URLSearchParams();
  if (typeof values['state'] === 'string') q.set('state', values['state']);
  q.set('limit', String(intOption(values['limit'], 'limit', 20, 1, 1000)));
  if (typeof values['tenant'] === 'string') q.set('tenant', values['tenant']);
  const { jobs } = await client(values).request<{ jobs: JobView[] }>('GET', `/v1/jobs?${q.toString()}`);
  print(values['json'] === true, jobs, () =>
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
};

export const statusCommand: Command = async (argv) => {
  const { values, positionals } = parse(argv, CLIENT_OPTIONS);
  const job = await client(values).request<JobView>('GET', `/v1/jobs/${needId(positionals, 'status')}`);
  print(values['json'] === true, job, () =>
    [
      `${job.id}  ${job.type}  ${job.state}  ${bar(job.progress, 20)}${job.message ? `  ${job.message}` : ''}`,
      `tenant ${job.tenant}, priority ${job.priority}, device ${job.device ?? '-'}, waited ${secs(job.waitSeconds)}, ran ${secs(job.runSeconds)}`,
      `params ${JSON.stringify(job.params ?? {})}`,
      ...(job.error ? [`error ${job.error.code}: ${job.error.message}`] : []),
    ].join('\n'),
  );
  return 0;
};

export const cancelCommand: Command = async (argv) => {
  const { values, positionals } = parse(argv, CLIENT_OPTIONS);
  const r = await client(values).request<{ outcome: string; job: JobView }>(
    'POST',
    `/v1/jobs/${needId(positionals, 'cancel')}/cancel`,
  );
  print(values['json'] === true, r, () =>
    r.outcome === 'final' ? `${r.job.id} already ${r.job.state}` : `${r.job.id} ${r.outcome}`,
  );
  return 0;
};

export const traceCommand: Command = async (argv) => {
  const { values, positionals } = parse(argv, { ...CLIENT_OPTIONS, output: { type: 'string', short: 'o' } });
  const id = needId(positionals, 'trace');
  const trace = await client(values).request<{ traceEvents: unknown[] }>('GET', `/v1/jobs/${id}/trace`);
  const file = typeof values['output'] === 'string' ? values['output'] : `${id}.trace.json`;
  writeFileSync(file, JSON.stringify(trace));
  print(
    values['json'] === true,
    { file, events: trace.traceEvents.length },
    () => `${file}: ${trace.traceEvents.length} events (open in https://ui.perfetto.dev)`,
  );
  return 0;
};

export const keysCommand: Command = async (argv) => {
  const { values, positionals } = parse(argv, {
    ...CLIENT_OPTIONS,
    role: { type: 'string' },
    weight: { type: 'string' },
    'max-jobs': { type: 'string' },
    'max-memory': { type: 'string' },
    'max-queued': { type: 'string' },
    'max-timeout': { type: 'string' },
    label: { type: 'string' },
  });
  const [sub, name] = positionals;
  const c = client(values);
  const json = values['json'] === true;
  if (sub === 'list') {
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
  if (sub === 'revoke' && name) {
    const r = await c.request<{ revoked: boolean }>('DELETE', `/v1/keys/${name}`);
    print(json, r, () => `key ${name} revoked`);
    return 0;
  }
  if (sub !== 'create' || !name)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      'usage: tandem keys create <tenant> [--role user|admin] [--weight w] [--max-jobs n] [--max-memory bytes] [--max-timeout seconds] | keys list | keys revoke <key id>',
    );
  const { tenants } = await c.request<{ tenants: { name: string }[] }>('GET', '/v1/tenants');
  let created: { key: string; keyId: string; tenant: { name: string; role: string } };
  if (tenants.some((t) => t.name === name)) {
    created = await c.request('POST', `/v1/tenants/${encodeURIComponent(name)}/keys`, {
      label: values['label'] ?? '',
    });
  } else {
    const body: Record<string, unknown> = { name };
    if (typeof values['role'] === 'string') body['role'] = values['role'];
    if (values['weight'] !== undefined) body['weight'] = Number(values['weight']);
    if (values['max-jobs'] !== undefined)
      body['maxConcurrentJobs'] = intOption(values['max-jobs'], 'max-jobs', 4, 1, 10_000);
    if (values['max-memory'] !== undefined) body['maxDeviceMemoryBytes'] = Number(values['max-memory']);
    if (values['max-queued'] !== undefined)
      body['maxQueuedJobs'] = intOption(values['max-queued'], 'max-queued', 1000, 1, 10_000_000);
    if (values['max-timeout'] !== undefined)
      body['maxTimeoutSeconds'] = intOption(values['max-timeout'], 'max-timeout', 3600, 1, 31_536_000);
    if (typeof values['label'] === 'string') body['keyLabel'] = values['label'];
    created = await c.request('POST', '/v1/tenants', body);
  }
  print(
    json,
    created,
    () =>
      `tenant ${created.tenant.name} (${created.tenant.role}) key ${created.keyId}:\n  ${created.key}\n(shown once; store it now)`,
  );
  return 0;
};

/** For a caller that wants the whole group (the lead's main.ts loads them lazily by name). */
export const serviceCommands: Record<string, Command> = {
  serve: serveCommand,
  submit: submitCommand,
  jobs: jobsCommand,
  status: statusCommand,
  cancel: cancelCommand,
  trace: traceCommand,
  keys: keysCommand,
};
