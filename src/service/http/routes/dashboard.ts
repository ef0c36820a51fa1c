/** Serves the built dashboard (web/dist) at / when it exists; the page talks to the API only. */
import fastifyStatic from '@fastify/static';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ServiceParts } from '../../parts.js';

export function dashboardRoutes(s: ServiceParts) {
  return async function (app: FastifyInstance): Promise<void> {
    const dir = s.config.webDir;
    if (!dir || !existsSync(join(dir, 'index.html'))) {
      app.get('/', async () => ({
        service: 'tandem',
        dashboard: dir ? `not built (run npm run build:web; looked in ${dir})` : 'disabled',
        api: '/openapi.json',
      }));
      return;
    }
    await app.register(fastifyStatic, { root: dir, prefix: '/', index: 'index.html', wildcard: false });
  };
}
