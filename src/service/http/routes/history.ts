/** GET /v1/devices/history: the kept samples of device utilization, memory and queue depth, as columns. */
import type { FastifyInstance } from 'fastify';
import type { DeviceHistory } from '../../obs/device-history.js';

const numbers = { type: 'array', items: { type: 'number' } } as const;
const gaps = { type: 'array', items: { type: 'number', nullable: true } } as const;

export const HISTORY_SCHEMA = {
  type: 'object',
  examples: [
    {
      intervalMs: 1000,
      capacity: 900,
      t: [1796284800000, 1796284801000],
      queued: [3, 2],
      running: [2, 2],
      devices: [
        {
          id: 'cpu0',
          kind: 'cpu',
          name: 'host CPU (worker threads)',
          memoryBytes: 25769803776,
          utilization: [0.5, 0.97],
          memoryUsed: [33554432, 67108864],
          inflight: [1, 2],
        },
      ],
    },
  ],
  properties: {
    intervalMs: { type: 'integer', description: 'time between samples' },
    capacity: { type: 'integer', description: 'samples kept (about 15 minutes)' },
    t: { ...numbers, description: 'sample times, epoch milliseconds, oldest first' },
    queued: { ...numbers, description: 'jobs queued in the service at each sample' },
    running: { ...numbers, description: 'jobs running at each sample' },
    devices: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          kind: { type: 'string' },
          name: { type: 'string' },
          memoryBytes: { type: 'number' },
          utilization: { ...gaps, description: 'busy fraction of the last 5 s; null: device not open' },
          memoryUsed: { ...gaps, description: 'bytes of device memory in use' },
          inflight: { ...gaps, description: 'tasks on the device (dispatched, not finished)' },
        },
      },
    },
  },
} as const;

export function historyRoutes(history: DeviceHistory) {
  return async function (app: FastifyInstance): Promise<void> {
    app.get<{ Querystring: { since?: string } }>(
      '/v1/devices/history',
      {
        schema: {
          operationId: 'getDeviceHistory',
          summary:
            'The last ~15 minutes of per-device utilization, memory in use and queue depth, sampled every ' +
            'second, as columns (index i of every array belongs to time t[i]); ?since=ms returns only later samples',
          tags: ['system'],
          querystring: {
            type: 'object',
            additionalProperties: false,
            properties: {
              since: {
                type: 'string',
                pattern: '^[0-9]{1,15}$',
                description: 'epoch milliseconds: only samples taken after it (for incremental polling)',
              },
            },
          },
          response: { 200: HISTORY_SCHEMA },
        },
      },
      async (req) => history.read(req.query.since === undefined ? undefined : Number(req.query.since)),
    );
  };
}
