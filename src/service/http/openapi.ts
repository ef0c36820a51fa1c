/**
 * OpenAPI 3.0 document built from the routes' own JSON schemas (collected as routes are added), so the
 * document and the validation can never disagree.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { ERROR_BODY_SCHEMA } from './errors.js';

type Schema = Record<string, unknown>;

declare module 'fastify' {
  interface FastifySchema {
    summary?: string;
    tags?: readonly string[];
    hide?: boolean;
  }
}

interface CollectedRoute {
  method: string;
  url: string;
  schema: Schema;
  isPublic: boolean;
}

export type OpenApiSource = () => Schema;

function paramsOf(where: 'path' | 'query', s: unknown): Schema[] {
  const props =
    (s as { properties?: Record<string, Schema>; required?: string[] } | undefined)?.properties ?? {};
  const req = new Set((s as { required?: string[] } | undefined)?.required ?? []);
  return Object.entries(props).map(([name, schema]) => ({
    name,
    in: where,
    required: where === 'path' || req.has(name),
    schema,
    ...(typeof schema['description'] === 'string' ? { description: schema['description'] } : {}),
  }));
}

export function collectOpenApi(app: FastifyInstance): OpenApiSource {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    const schema = r.schema as Schema | undefined;
    if (!schema || schema['hide']) return;
    for (const m of Array.isArray(r.method) ? r.method : [r.method])
      if (m !== 'HEAD')
        routes.push({
          method: m.toLowerCase(),
          url: r.url,
          schema,
          // As http/auth.ts decides: /v1/ and admin routes (/metrics) need a key.
          isPublic: !r.url.startsWith('/v1/') && r.config?.admin !== true,
        });
  });
  return () => {
    const paths: Record<string, Record<string, Schema>> = {};
    for (const r of routes) {
      const path = r.url.replace(/:([A-Za-z_]+)/g, '{$1}');
      const responses: Record<string, Schema> = {};
      for (const [code, body] of Object.entries((r.schema['response'] as Record<string, Schema>) ?? {}))
        responses[code] = {
          description: (body['description'] as string | undefined) ?? (code.startsWith('2') ? 'OK' : 'error'),
          content: {
            [code === '200' && r.url === '/metrics' ? 'text/plain' : 'application/json']: { schema: body },
          },
        };
      // Errors are not in the routes' response schemas (compiling a serializer per status per route
      // slowed start-up); every route answers them in the one catalogue shape.
      responses['default'] = {
        description:
          'error: {error:{code,message,details}} with the catalogue status (400, 401, 403, 404, 409, 413, 429, 5xx)',
        content: { 'application/json': { schema: ERROR_BODY_SCHEMA } },
      };
      paths[path] ??= {};
      paths[path][r.method] = {
        summary: r.schema['summary'] ?? '',
        tags: r.schema['tags'] ?? [],
        parameters: [...paramsOf('path', r.schema['params']), ...paramsOf('query', r.schema['querystring'])],
        ...(r.schema['body']
          ? { requestBody: { required: true, content: { 'application/json': { schema: r.schema['body'] } } } }
          : {}),
        responses,
        ...(r.isPublic ? { security: [] } : {}),
      };
    }
    return {
      openapi: '3.0.3',
      info: {
        title: 'Tandem service',
        version: '0.1.0',
        description: 'Jobs on pooled CPUs and GPUs. Errors: {error:{code,message,details}}.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'tdm_<id>_<secret> API key' },
        },
      },
      security: [{ apiKey: [] }],
      paths,
    };
  };
}
