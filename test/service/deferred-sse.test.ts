/**
 * DeferredSse over a real HTTP server and client: a stream's chunks and its end arrive in order, none is
 * written before the turn's microtasks have run (the point: a generation engine launches its next step
 * there), two streams' chunks interleave without mixing (multi-byte text included), and a stream whose
 * client has gone is skipped.
 */
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { DeferredSse } from '../../src/service/http/deferred-sse.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ port, path, host: '127.0.0.1' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

test('DeferredSse: in order, after the microtasks, per stream; a gone client is skipped', async () => {
  const seen: string[] = [];
  const responses: ServerResponse[] = [];
  const ready = deferred();
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    responses.push(res);
    if (responses.length === 2) ready.resolve();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    const bodies = [get(port, '/a'), get(port, '/b')];
    await ready.promise;
    const [a, b] = responses.map((r) => new DeferredSse(r)) as [DeferredSse, DeferredSse];
    for (let i = 0; i < 5; i++) {
      a.write(`data: a${i}\n\n`);
      b.write(`data: b${i}é…\n\n`);
    }
    a.end('data: [DONE]\n\n');
    b.end('data: [DONE]\n\n');
    assert.equal(a.closing, true);
    // Nothing reached either socket in this turn, nor in its microtasks.
    await Promise.resolve();
    queueMicrotask(() => seen.push(`a ${responses[0]!.writableLength} ${responses[0]!.writableEnded}`));
    await Promise.resolve();
    assert.deepEqual(seen, ['a 0 false']);
    const [bodyA, bodyB] = await Promise.all(bodies);
    const expect = (s: string, tail = ''): string =>
      [0, 1, 2, 3, 4].map((i) => `data: ${s}${i}${tail}\n\n`).join('') + 'data: [DONE]\n\n';
    assert.equal(bodyA, expect('a'));
    assert.equal(bodyB, expect('b', 'é…'));

    // A client that went away: its stream's writes are dropped, the others still written.
    responses.length = 0;
    const gone = new AbortController();
    const ready2 = deferred();
    server.removeAllListeners('request');
    server.on('request', (_req, res: ServerResponse) => {
      res.writeHead(200);
      responses.push(res);
      if (responses.length === 2) ready2.resolve();
    });
    const lost = new Promise<void>((resolve) => {
      request({ port, path: '/gone', host: '127.0.0.1', signal: gone.signal })
        .on('error', () => resolve())
        .end();
    });
    const kept = get(port, '/kept');
    await ready2.promise;
    const byPath = responses.map((r) => r.req.url);
    const goneRes = responses[byPath.indexOf('/gone')]!;
    const keptRes = responses[byPath.indexOf('/kept')]!;
    gone.abort();
    await lost;
    await new Promise<void>((r) => (goneRes.destroyed ? r() : goneRes.once('close', () => r())));
    const g = new DeferredSse(goneRes);
    const k = new DeferredSse(keptRes);
    g.write('data: lost\n\n');
    k.write('data: kept\n\n');
    g.end('data: [DONE]\n\n');
    k.end('data: [DONE]\n\n');
    assert.equal(await kept, 'data: kept\n\ndata: [DONE]\n\n');
    assert.equal(goneRes.writableEnded, false, 'the gone stream was not written to');
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
