/**
 * `tandem types`: the job types and their parameter schemas — from the service's /v1/job-types when a
 * service is named (--url or TANDEM_URL), otherwise from this build's own registry (no service, no
 * device: the registry holds descriptions and schemas, nothing runs).
 */
import { print } from './output.js';
import { ServiceClient, clientConfig } from './service-client.js';
import type { ClientOptions } from './service-commands.js';

export interface JobTypeView {
  readonly name: string;
  readonly description: string;
  readonly params: Readonly<Record<string, unknown>>;
}

type Schema = Readonly<Record<string, unknown>>;

async function localTypes(): Promise<JobTypeView[]> {
  const { JobTypeRegistry } = await import('../service/jobs/registry.js');
  const { registerBuiltinJobTypes } = await import('../service/jobs/builtin.js');
  const registry = new JobTypeRegistry();
  await registerBuiltinJobTypes(registry);
  return registry.list().map((t) => ({ name: t.name, description: t.description, params: t.paramsSchema }));
}

/** One schema in a few words: `integer 1..8192`, `"f32" | "f64"`, `object`. */
export function schemaSummary(s: Schema): string {
  if (Array.isArray(s['enum'])) return (s['enum'] as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
  if ('const' in s) return JSON.stringify(s['const']);
  for (const k of ['oneOf', 'anyOf'] as const)
    if (Array.isArray(s[k])) return (s[k] as Schema[]).map(schemaSummary).join(' | ');
  const type = Array.isArray(s['type']) ? (s['type'] as string[]).join('|') : String(s['type'] ?? 'any');
  const lo = s['minimum'] ?? s['exclusiveMinimum'];
  const hi = s['maximum'] ?? s['exclusiveMaximum'];
  const range =
    lo !== undefined || hi !== undefined
      ? ` ${s['exclusiveMinimum'] !== undefined ? '>' : ''}${lo === undefined ? '' : String(lo)}..${s['exclusiveMaximum'] !== undefined ? '<' : ''}${hi === undefined ? '' : String(hi)}`
      : '';
  if (type === 'array' && s['items'] && typeof s['items'] === 'object')
    return `array of ${schemaSummary(s['items'] as Schema)}`;
  return `${type}${range}`;
}

/** The human listing: a type per paragraph, a parameter per line. */
export function formatTypes(types: readonly JobTypeView[]): string {
  return types
    .map((t) => {
      const props = (t.params['properties'] ?? {}) as Record<string, Schema>;
      const required = new Set((t.params['required'] as string[] | undefined) ?? []);
      const names = Object.keys(props);
      const width = Math.max(0, ...names.map((n) => n.length));
      const lines = names.map((n) => {
        const p = props[n]!;
        const def = 'default' in p ? ` (default ${JSON.stringify(p['default'])})` : '';
        const req = required.has(n) ? ' (required)' : '';
        const what = typeof p['description'] === 'string' ? `  ${p['description']}` : '';
        return `  ${n.padEnd(width)}  ${schemaSummary(p)}${req}${def}${what}`;
      });
      return [
        `${t.name} — ${t.description}`,
        ...(lines.length > 0 ? lines : ['  (no parameter schema published)']),
      ].join('\n');
    })
    .join('\n\n');
}

export async function typesCommand(opts: ClientOptions & { readonly local?: boolean }): Promise<number> {
  const remote = opts.url !== undefined && opts.url !== '' && opts.local !== true;
  const types = remote
    ? (
        await new ServiceClient(clientConfig({ url: opts.url, key: opts.key })).request<{
          types: JobTypeView[];
        }>('GET', '/v1/job-types')
      ).types
    : await localTypes();
  const source = remote ? clientConfig({ url: opts.url }).url : 'local';
  print(opts.json === true, { source, types }, () => `${formatTypes(types)}\n\n(from ${source})`);
  return 0;
}
