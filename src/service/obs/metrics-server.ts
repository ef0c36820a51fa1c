/**
 * The optional keyless metrics listener (`TANDEM_METRICS_ADDR` / `--metrics-listen host:port`): only
 * `GET /metrics`, on an address of its own, so a Prometheus on a private network scrapes without an API
 * key while the API port keeps `/metrics` behind an admin key. Whoever reaches this address sees tenant
 * names in the labels: bind it to loopback or an internal interface.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseListenAddress } from '../config.js';
import type { ServiceMetrics } from './metrics.js';

export interface MetricsListener {
  /** e.g. http://127.0.0.1:9464/metrics */
  readonly url: string;
  close(): Promise<void>;
}

export async function listenMetrics(metrics: ServiceMetrics, address: string): Promise<MetricsListener> {
  const { host, port } = parseListenAddress(address, 'the metrics address');
  const server: Server = createServer({ headersTimeout: 5000, requestTimeout: 10_000 }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(e)}\n`),
    );
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    url: `http://${shown}:${a.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
