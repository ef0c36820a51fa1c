/** Admin routes: tenants (with quotas and fair-share weight) and their API keys. */
import type { FastifyInstance } from 'fastify';
import { TandemError } from '../../../core/errors.js';
import type { NewTenant } from '../../auth/tenants.js';
import type { ServiceParts } from '../../parts.js';

const TENANT_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    role: { type: 'string' },
    weight: { type: 'number' },
    maxConcurrentJobs: { type: 'integer' },
    maxDeviceMemoryBytes: { type: 'number' },
    maxQueuedJobs: { type: 'integer' },
    maxTimeoutSeconds: { type: 'number' },
  },
} as const;

const KEY_SCHEMA = {
  type: 'object',
  properties: {
    tenant: TENANT_SCHEMA,
    keyId: { type: 'string' },
    key: { type: 'string', description: 'shown once' },
  },
} as const;

export function adminRoutes(s: ServiceParts) {
  return async function (app: FastifyInstance): Promise<void> {
    app.post<{ Body: NewTenant & { keyLabel?: string } }>(
      '/v1/tenants',
      {
        config: { admin: true },
        schema: {
          summary: 'Create a tenant and its first API key (admin)',
          tags: ['tenants'],
          body: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' },
              role: { type: 'string', enum: ['admin', 'user'] },
              weight: { type: 'number', exclusiveMinimum: 0, maximum: 1000 },
              maxConcurrentJobs: { type: 'integer', minimum: 1, maximum: 10_000 },
              maxDeviceMemoryBytes: { type: 'integer', minimum: 0 },
              maxQueuedJobs: { type: 'integer', minimum: 1, maximum: 10_000_000 },
              maxTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 31_536_000 },
              keyLabel: { type: 'string', maxLength: 64 },
            },
          },
          response: { 201: KEY_SCHEMA },
        },
      },
      async (req, reply) => {
        const { keyLabel, ...t } = req.body;
        const tenant = s.tenants.createTenant(t);
        return reply.code(201).send(s.tenants.createKey(tenant.id, keyLabel ?? ''));
      },
    );

    app.get(
      '/v1/tenants',
      {
        config: { admin: true },
        schema: {
          summary: 'List tenants (admin)',
          tags: ['tenants'],
          response: {
            200: { type: 'object', properties: { tenants: { type: 'array', items: TENANT_SCHEMA } } },
          },
        },
      },
      async () => ({ tenants: s.tenants.list() }),
    );

    app.post<{ Params: { name: string }; Body: { label?: string } | undefined }>(
      '/v1/tenants/:name/keys',
      {
        config: { admin: true },
        schema: {
          summary: 'Create another API key for a tenant (admin)',
          tags: ['tenants'],
          params: { type: 'object', properties: { name: { type: 'string', maxLength: 64 } } },
          response: { 201: KEY_SCHEMA },
        },
      },
      async (req, reply) => {
        const tenant = s.tenants.byName(req.params.name);
        if (!tenant) throw new TandemError('TANDEM_ERR_NOT_FOUND', `no tenant ${req.params.name}`);
        const label = req.body && typeof req.body.label === 'string' ? req.body.label.slice(0, 64) : '';
        return reply.code(201).send(s.tenants.createKey(tenant.id, label));
      },
    );

    app.delete<{ Params: { keyId: string } }>(
      '/v1/keys/:keyId',
      {
        config: { admin: true },
        schema: {
          summary: 'Revoke an API key (admin)',
          tags: ['tenants'],
          params: { type: 'object', properties: { keyId: { type: 'string', pattern: '^[0-9a-f]{16}$' } } },
          response: { 200: { type: 'object', properties: { revoked: { type: 'boolean' } } } },
        },
      },
      async (req) => {
        if (!s.tenants.revokeKey(req.params.keyId))
          throw new TandemError('TANDEM_ERR_NOT_FOUND', `no key ${req.params.keyId}`);
        return { revoked: true };
      },
    );
  };
}
