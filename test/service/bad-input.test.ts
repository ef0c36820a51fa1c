/**
 * Bad input (issue 19, finding 6): parameters nested thousands deep, a huge parameter body, a long path
 * and slow clients get a 400/404/408 or a closed connection with a stable code — never a 500, never a
 * whole echo of what was sent — and the server's log never reaches `tandem serve --json`'s stdout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { toTandemError } from '../../src/service/http/errors.js';
import { invalid } from '../../src/workloads/validate.js';
import { validateMdParams } from '../../src/workloads/md/params.js';
import { tempDir, testService } from './helpers.js';
import { startServe } from './serve-process.js';

const nestedObject = (depth: number, leaf = '1'): string => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
const nestedArray = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

void test('parameters nested 20,000 deep: 400 TANDEM_ERR_LIMIT before validation, for every job type', async () => {
  const t = await testService({ bodyLimitBytes: 1 << 20 });
  try {
    for (const type of ['md', 'sleep', 'option', 'var', 'gemm', 'custom-kernel']) {
      for (const [name, deep] of [
        ['object', nestedObject(20_000)],
        ['array', nestedArray(100_000)],
        ['just past the limit', nestedObject(31)],
      ] as const) {
        const res = await t.svc.app.inject({
          method: 'POST',
          url: '/v1/jobs',
          headers: { ...t.auth(), 'content-type': 'application/json' },
          payload: `{"type":"${type}","params":{"cells":${deep}}}`,
        });
        assert.equal(res.statusCode, 400, `${type}, ${name}: ${res.body.slice(0, 200)}`);
        const err = (res.json() as { error: { code: string; details: { limit: string } } }).error;
        assert.equal(err.code, 'TANDEM_ERR_LIMIT', `${type}, ${name}`);
        assert.equal(err.details.limit, 'depth');
      }
    }
    // Within the limit, the job type's own validator answers (and names the field).
    const ok = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...t.auth(), 'content-type': 'application/json' },
      payload: `{"type":"md","params":{"cells":${nestedObject(28)}}}`,
    });
    assert.equal(ok.statusCode, 400, ok.body);
    assert.equal((ok.json() as { error: { code: string } }).error.code, 'TANDEM_ERR_INVALID_ARGUMENT');
    assert.ok(ok.body.length < 600, `message kept short: ${ok.body.length} bytes`);
  } finally {
    await t.close();
  }
});

void test('a body of more than 100,000 values: 400 TANDEM_ERR_LIMIT', async () => {
  const t = await testService({ bodyLimitBytes: 1 << 20 });
  try {
    const res = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...t.auth(), 'content-type': 'application/json' },
      payload: `{"type":"var","params":{"portfolio":[${new Array(150_000).fill('0').join(',')}]}}`,
    });
    assert.equal(res.statusCode, 400, res.body.slice(0, 200));
    const err = (res.json() as { error: { code: string; details: { limit: string } } }).error;
    assert.deepEqual([err.code, err.details.limit], ['TANDEM_ERR_LIMIT', 'values']);
  } finally {
    await t.close();
  }
});

void test('the validators’ message builder survives any value and shows only a short preview', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 20_000; i++) deep = [deep];
  const e = invalid('md.cells', 'must be a number or [nx, ny, nz]', deep);
  assert.equal(e.code, 'TANDEM_ERR_INVALID_ARGUMENT');
  assert.ok(e.message.length < 200, e.message);
  assert.match(e.message, /got \[\[\[/);
  // Through a real validator: a huge string and a wide array are cut, not echoed.
  assert.throws(
    () => validateMdParams({ cells: 'x'.repeat(100_000) }),
    (err: Error) => err.message.length < 300 && /md\.cells/.test(err.message),
  );
  assert.throws(
    () => validateMdParams({ cells: new Array(50_000).fill(7) }),
    (err: Error) => err.message.length < 300 && /got \[7,7,7,7,…\]/.test(err.message),
  );
  // Small values read as before.
  assert.match(invalid('x', 'must be > 0', -1).message, /x must be > 0, got -1$/);
  assert.match(invalid('x', 'is bad', { a: [1, 2] }).message, /got \{"a":\[1,2\]\}$/);
});

void test('a long path is not echoed back whole', async () => {
  const t = await testService();
  try {
    for (const url of [`/v1/${'x'.repeat(5000)}`, `/${'y'.repeat(5000)}`, `/v1/jobs/${'z'.repeat(5000)}`]) {
      const res = await t.svc.app.inject({ url, headers: t.auth() });
      assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${res.statusCode}`);
      assert.ok(res.body.length < 500, `${url.slice(0, 12)}…: ${res.body.length} bytes answered`);
      assert.ok(!res.body.includes('x'.repeat(200)) && !res.body.includes('y'.repeat(200)));
    }
  } finally {
    await t.close();
  }
});

/** Sends `parts` one every `gapMs` and resolves with what the server answered and when it closed. */
function slowClient(
  port: number,
  parts: readonly string[],
  gapMs: number,
): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let answer = '';
    let i = 0;
    const sock: Socket = connect(port, '127.0.0.1');
    const timer = setInterval(() => {
      if (i < parts.length && !sock.destroyed) sock.write(parts[i++]!);
    }, gapMs);
    sock.on('data', (b) => (answer += b.toString()));
    sock.on('error', () => undefined); // a reset after the server's answer is the same outcome
    sock.on('close', () => {
      clearInterval(timer);
      resolve({ ms: performance.now() - t0, answer });
    });
    setTimeout(() => {
      clearInterval(timer);
      sock.destroy();
      reject(new Error(`still connected after 15 s; answered: ${answer.slice(0, 100)}`));
    }, 15_000).unref();
  });
}

void test(
  'slow clients are cut off: headers a byte at a time, and a body that never ends',
  { timeout: 60_000 },
  async () => {
    const t = await testService({ headersTimeoutMs: 1000, requestTimeoutMs: 2000 });
    try {
      await t.svc.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (t.svc.app.server.address() as AddressInfo).port;
      // Slowloris: the request line, then a header one byte every 100 ms, never finished.
      const header = `POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(400)}`;
      const slowHeaders = await slowClient(port, [...header], 100);
      assert.ok(slowHeaders.ms < 4000, `headers: closed after ${slowHeaders.ms.toFixed(0)} ms`);
      // Headers at once, then a body announced as 1000 bytes that comes a byte every 100 ms.
      const head =
        `POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.admin}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n';
      const slowBody = await slowClient(port, [head, ...'{"type":"sleep","params":{}'.padEnd(999)], 100);
      assert.ok(slowBody.ms < 5000, `body: closed after ${slowBody.ms.toFixed(0)} ms`);
      assert.match(slowBody.answer, /^HTTP\/1\.1 408/);
      // Meanwhile, and after, an ordinary client is served.
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(res.status, 200);
    } finally {
      await t.close();
    }
  },
);

void test(
  'serve --json: the log goes to stderr, stdout holds only the one JSON line',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir();
    const s = startServe(dir, ['--no-supervise'], { TANDEM_LOG: 'info', TANDEM_BACKENDS: 'none' });
    try {
      const line = await s.next();
      assert.ok(line.url && line.pid, `the first stdout line is the serve line: ${JSON.stringify(line)}`);
      // Requests the logger writes lines for: a normal one, a 404, a 400, an unauthenticated one.
      await fetch(`${line.url}/healthz`);
      await fetch(`${line.url}/nope/${'q'.repeat(300)}`);
      await fetch(`${line.url}/v1/jobs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${line.adminKey ?? ''}`, 'content-type': 'application/json' },
        body: `{"type":"md","params":${nestedObject(20_000)}}`,
      });
      await fetch(`${line.url}/v1/jobs`);
      s.kill('SIGTERM');
      await s.exited;
      // No second line: a log line on stdout would be rejected here as "not JSON".
      await assert.rejects(s.next(2000), /before a line/);
      assert.match(s.stderr(), /"reqId"/, 'the request log went to stderr');
    } finally {
      s.kill();
    }
  },
);

void test('a store error at the HTTP boundary is 503 TANDEM_ERR_UNAVAILABLE, never a 500', () => {
  const e = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
  const err = toTandemError(e);
  assert.equal(err.code, 'TANDEM_ERR_UNAVAILABLE');
  assert.equal(err.httpStatus, 503);
  assert.match(err.message, /disk is full/);
});
