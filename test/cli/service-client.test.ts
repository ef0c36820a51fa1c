/** The CLI's HTTP client: where it connects, and that a silent service cannot hang it. */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { ServiceClient, clientConfig } from '../../src/cli/service-client.js';

void test('an empty TANDEM_URL or TANDEM_KEY counts as not set', () => {
  assert.deepEqual(clientConfig({}, { TANDEM_URL: '', TANDEM_KEY: '' }), {
    url: 'http://127.0.0.1:8080',
    key: null,
  });
  assert.deepEqual(clientConfig({ url: 'http://h:1/' }, { TANDEM_URL: 'http://e:2', TANDEM_KEY: 'k' }), {
    url: 'http://h:1',
    key: 'k',
  });
});

void test('a service that accepts the connection but never answers fails the request in time', async () => {
  const sockets: Socket[] = [];
  const silent = createServer((s) => void sockets.push(s)); // accepts, reads nothing, answers nothing
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  try {
    const t0 = performance.now();
    await assert.rejects(
      new ServiceClient({ url, key: null, timeoutMs: 300 }).request('GET', '/v1/jobs'),
      /TANDEM_ERR_UNAVAILABLE: GET \/v1\/jobs: no answer from the service at http:\/\/127\.0\.0\.1:\d+ within 0\.3 s/,
    );
    assert.ok(performance.now() - t0 < 5000);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});
