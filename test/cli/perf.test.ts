/**
 * `tandem perf` end to end: the CLI process against a real Fastify server answering as the interactive
 * lane does, the key and URL from TANDEM_KEY/TANDEM_URL, the input file's inputs in each body, a sweep
 * in the JSON report and in the human lines, and usage errors.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { runCli } from './cli-process.js';

void describe('tandem perf', () => {
  let app: FastifyInstance;
  let url = '';
  const seen = {
    keys: new Set<string>(),
    spots: new Set<number>(),
    versions: new Set<string>(),
    sockets: new Set<unknown>(),
  };
  const dir = mkdtempSync(join(tmpdir(), 'tandem-perf-'));
  const input = join(dir, 'in.json');
  writeFileSync(input, JSON.stringify([{ spot: 100 }, { spot: 101 }]));

  before(async () => {
    app = Fastify();
    const handler = async (
      req: {
        headers: Record<string, unknown>;
        body: { inputs: { spot: number } };
        url: string;
        raw: { socket: unknown };
      },
      reply: { header(k: string, v: string): unknown },
    ): Promise<unknown> => {
      seen.keys.add(String(req.headers['authorization']));
      seen.spots.add(req.body.inputs.spot);
      seen.versions.add(req.url);
      seen.sockets.add(req.raw.socket);
      await new Promise((r) => setTimeout(r, 1));
      reply.header('server-timing', 'queue;dur=0.5, compute;dur=1, serialize;dur=0.1');
      reply.header('x-tandem-batch-size', '2');
      return { outputs: { price: 1 } };
    };
    app.post('/v1/models/:name/infer', handler as never);
    app.post('/v1/models/:name/versions/:v/infer', handler as never);
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await app.close();
  });

  void it('sweeps concurrency levels and reports them as JSON', async () => {
    const r = await runCli(
      [
        'perf',
        'pricer',
        '--concurrency',
        '1:2',
        '--seconds',
        '0.3',
        '--warmup',
        '0.1',
        '--input',
        input,
        '--json',
      ],
      { env: { TANDEM_URL: url, TANDEM_KEY: 'secret' } },
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      model: string;
      levels: {
        concurrency: number;
        client: { count: number };
        server: { compute: { mean: number } };
        batchSizes: Record<string, number>;
      }[];
    };
    assert.equal(out.model, 'pricer');
    assert.deepEqual(
      out.levels.map((l) => l.concurrency),
      [1, 2],
    );
    for (const l of out.levels) {
      assert.ok(l.client.count > 5);
      assert.equal(l.server.compute.mean, 1);
      assert.deepEqual(Object.keys(l.batchSizes), ['2']);
    }
    assert.deepEqual([...seen.keys], ['Bearer secret']);
    assert.deepEqual([...seen.spots].sort(), [100, 101]);
  });

  void it('prints one line per level, and targets a version', async () => {
    const r = await runCli(
      [
        'perf',
        'pricer',
        '--concurrency',
        '3',
        '--seconds',
        '0.2',
        '--warmup',
        '0',
        '--model-version',
        '4',
        '--url',
        url,
      ],
      {},
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^concurrency 3: [0-9.]+ infer\/s, latency p50 [0-9.]+ p95 [0-9.]+ p99 [0-9.]+ ms; server queue 0\.50 compute 1\.00 serialize 0\.10 ms \(means\); batch sizes 2:\d+\n$/,
    );
    assert.ok([...seen.versions].some((u) => u === '/v1/models/pricer/versions/4/infer'));
  });

  void it('spreads the clients over --threads worker threads and pools their samples', async () => {
    seen.sockets.clear();
    const r = await runCli(
      ['perf', 'pricer', '--concurrency', '4', '--threads', '2', '--seconds', '0.3', '--warmup', '0.1'],
      { env: { TANDEM_URL: url, TANDEM_KEY: 'secret' } },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^concurrency 4: [0-9.]+ infer\/s, .* batch sizes 2:\d+\n$/);
    const n = seen.sockets.size;
    assert.ok(n >= 2 && n <= 4, `${n} connections for 4 clients`);
    const bad = await runCli(['perf', 'pricer', '--threads', '0', '--url', url]);
    assert.equal(bad.code, 2);
  });

  void it('refuses a bad sweep and a missing input file with exit 2', async () => {
    const bad = await runCli(['perf', 'pricer', '--concurrency', '64:1', '--url', url]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /concurrency "64:1"/);
    const missing = await runCli([
      'perf',
      'pricer',
      '--input',
      join(dir, 'nope.json'),
      '--url',
      url,
      '--json',
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stdout, /TANDEM_ERR_NOT_FOUND/);
  });
});
