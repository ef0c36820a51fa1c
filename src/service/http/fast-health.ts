/**
 * `GET /healthz` answered from the raw request, before Fastify routes it. Under overload every request
 * waits its turn on the event loop, and the probe's own handling adds to that: Fastify's routing,
 * hooks, schema serializer and reply for a body built from memory. Here it is one JSON.stringify and one
 * write; the same body and status as the route's (routes/system.ts, healthAnswer), and its duration is
 * still recorded under the route. Anything else, a HEAD, a query string, or a server that is closing
 * (Fastify then answers 503 for every request) goes to Fastify untouched.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

export function installFastHealth(
  app: FastifyInstance,
  answer: () => { status: number; body: unknown },
  observe: (seconds: number) => void,
): void {
  const server = app.server;
  const listeners = server.listeners('request') as RequestListener[];
  // One listener (Fastify's, or one that wraps it): anything else is a layout this does not know.
  if (listeners.length !== 1) return;
  const next = listeners[0]!;
  server.removeListener('request', next);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET' || req.url !== '/healthz' || !server.listening) {
      next.call(server, req, res);
      return;
    }
    const t0 = performance.now();
    const { status, body } = answer();
    const json = JSON.stringify(body);
    res.writeHead(status, [
      'content-type',
      'application/json; charset=utf-8',
      'content-length',
      String(Buffer.byteLength(json)),
    ]);
    res.end(json);
    observe((performance.now() - t0) / 1000);
  });
}
