/**
 * The JobsApi contract as route tests: the same cases run against the single node (routes.test.ts:
 * SQLite, in-process dispatcher) and the scaled-out control plane (test/scale/control-plane.test.ts:
 * PostgreSQL, BullMQ, an agent process), the way one conformance suite runs against every queue.
 * A deployment runs one job at a time, so a second job stays queued while a long one runs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import createClient from 'openapi-fetch';
import type { paths } from '../../src/service/client/openapi-types.js';

export interface Deployment {
  inject(req: InjectOptions): Promise<LightMyRequestResponse>;
  /** Keys of two ordinary tenants. */
  readonly alice: string;
  readonly bob: string;
  close(): Promise<void>;
}

interface Job {
  id: string;
  state: string;
  tenant: string;
  progress: number;
  error: { code: string } | null;
  hasResult: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FINAL = ['succeeded', 'failed', 'cancelled'];

export function jobsApiSuite(
  name: string,
  setup: () => Promise<Deployment>,
  opts: { skip?: string | false } = {},
): void {
  describe(`JobsApi contract: ${name}`, { skip: opts.skip ?? false }, () => {
    let deployment: Deployment | null = null;
    before(async () => {
      deployment = await setup();
    });
    after(async () => {
      await deployment?.close();
    });
    const d = (): Deployment => {
      if (!deployment) throw new Error('the deployment did not start');
      return deployment;
    };
    const auth = (key: string) => ({ authorization: `Bearer ${key}` });
    const submit = (key: string, body: object, query = '') =>
      d().inject({ method: 'POST', url: `/v1/jobs${query}`, headers: auth(key), payload: body });
    const get = async (key: string, id: string) =>
      (await d().inject({ url: `/v1/jobs/${id}`, headers: auth(key) })).json<Job>();
    async function until(id: string, states: string[], ms = 20_000): Promise<Job> {
      const t0 = Date.now();
      for (;;) {
        const j = await get(d().alice, id);
        if (states.includes(j.state)) return j;
        if (Date.now() - t0 > ms)
          assert.fail(`job ${id} is ${j.state} after ${ms} ms, wanted ${states.join('|')}`);
        await sleep(20);
      }
    }
    const errorCode = (r: LightMyRequestResponse) => r.json<{ error: { code: string } }>().error.code;

    it('submit answers 202 with the job; get, list, result and trace follow it', async () => {
      const res = await submit(d().alice, { type: 'sleep', params: { ms: 30, steps: 2 } });
      assert.equal(res.statusCode, 202, res.body);
      const job = res.json<Job>();
      assert.match(job.id, /^job_[0-9a-f]{20}$/);
      assert.equal(job.tenant, 'alice');
      const done = await until(job.id, FINAL);
      assert.equal(done.state, 'succeeded', JSON.stringify(done.error));
      assert.equal(done.progress, 1);
      assert.equal(done.hasResult, true);
      const list = (await d().inject({ url: '/v1/jobs?limit=1000', headers: auth(d().alice) })).json<{
        jobs: Job[];
      }>();
      assert.ok(list.jobs.some((j) => j.id === job.id));
      const result = await d().inject({ url: `/v1/jobs/${job.id}/result`, headers: auth(d().alice) });
      assert.equal(result.statusCode, 200);
      assert.deepEqual(result.json(), { id: job.id, result: { sleptMs: 30, steps: 2 } });
      const trace = await d().inject({ url: `/v1/jobs/${job.id}/trace`, headers: auth(d().alice) });
      assert.equal(trace.statusCode, 200);
      const names = trace
        .json<{ traceEvents: { name: string; ph: string }[] }>()
        .traceEvents.map((e) => e.name);
      for (const want of ['queued', 'run sleep'])
        assert.ok(names.includes(want), `${want} in ${names.join(',')}`);
    });

    it('?wait holds the answer until the job has finished, with its inline result', async () => {
      const res = await submit(d().alice, { type: 'sleep', params: { ms: 20 } }, '?wait=20');
      assert.equal(res.statusCode, 202);
      const body = res.json<Job & { result: unknown }>();
      assert.equal(body.state, 'succeeded');
      assert.deepEqual(body.result, { sleptMs: 20, steps: 1 });
    });

    it('an idempotency key names the same job (200 the second time)', async () => {
      const key = `idem-${Date.now()}`;
      const a = await submit(d().alice, { type: 'sleep', params: { ms: 1 }, idempotencyKey: key });
      const b = await submit(d().alice, { type: 'sleep', params: { ms: 1 }, idempotencyKey: key });
      assert.deepEqual([a.statusCode, b.statusCode], [202, 200]);
      assert.equal(a.json<Job>().id, b.json<Job>().id);
      await until(a.json<Job>().id, FINAL);
    });

    it('cancel: a queued job at once (POST), a running one through its signal (DELETE alias); results say why not', async () => {
      const long = (
        await submit(d().alice, { type: 'sleep', params: { ms: 60_000, steps: 600 } })
      ).json<Job>();
      await until(long.id, ['running']);
      const queued = (await submit(d().alice, { type: 'sleep', params: { ms: 10 } })).json<Job>();
      assert.equal((await get(d().alice, queued.id)).state, 'queued');
      const notReady = await d().inject({ url: `/v1/jobs/${long.id}/result`, headers: auth(d().alice) });
      assert.equal(notReady.statusCode, 409);
      assert.equal(errorCode(notReady), 'TANDEM_ERR_NOT_READY');

      const c1 = await d().inject({
        method: 'POST',
        url: `/v1/jobs/${queued.id}/cancel`,
        headers: auth(d().alice),
      });
      assert.equal(c1.statusCode, 200, c1.body);
      const a1 = c1.json<{ outcome: string; job: Job }>();
      assert.equal(a1.outcome, 'cancelled');
      assert.equal(a1.job.state, 'cancelled');
      const noResult = await d().inject({ url: `/v1/jobs/${queued.id}/result`, headers: auth(d().alice) });
      assert.equal(errorCode(noResult), 'TANDEM_ERR_CONFLICT');

      const c2 = await d().inject({ method: 'DELETE', url: `/v1/jobs/${long.id}`, headers: auth(d().alice) });
      assert.equal(c2.json<{ outcome: string }>().outcome, 'cancelling');
      const done = await until(long.id, FINAL, 10_000);
      assert.equal(done.state, 'cancelled');
      assert.equal(done.error?.code, 'TANDEM_ERR_CANCELLED');
      const again = await d().inject({
        method: 'POST',
        url: `/v1/jobs/${long.id}/cancel`,
        headers: auth(d().alice),
      });
      assert.equal(again.json<{ outcome: string }>().outcome, 'final');
    });

    it("tenants are isolated: another tenant's job is a 404 everywhere, and not listed", async () => {
      const id = (await submit(d().alice, { type: 'sleep', params: { ms: 1 } })).json<Job>().id;
      for (const [method, url] of [
        ['GET', `/v1/jobs/${id}`],
        ['GET', `/v1/jobs/${id}/result`],
        ['GET', `/v1/jobs/${id}/trace`],
        ['POST', `/v1/jobs/${id}/cancel`],
        ['DELETE', `/v1/jobs/${id}`],
      ] as const) {
        const r = await d().inject({ method, url, headers: auth(d().bob) });
        assert.equal(r.statusCode, 404, `${method} ${url}`);
        assert.equal(errorCode(r), 'TANDEM_ERR_NOT_FOUND');
      }
      const bobs = (await d().inject({ url: '/v1/jobs', headers: auth(d().bob) })).json<{ jobs: Job[] }>();
      assert.ok(!bobs.jobs.some((j) => j.id === id));
      await until(id, FINAL);
    });

    it('bad input gets the same catalogue errors', async () => {
      const cases: [string, InjectOptions, number, string][] = [
        ['no key', { url: '/v1/jobs' }, 401, 'TANDEM_ERR_UNAUTHORIZED'],
        ['wrong key', { url: '/v1/jobs', headers: auth('nope') }, 401, 'TANDEM_ERR_UNAUTHORIZED'],
        [
          'unknown type',
          { method: 'POST', url: '/v1/jobs', headers: auth(d().alice), payload: { type: 'bitcoin' } },
          400,
          'TANDEM_ERR_UNKNOWN_JOB_TYPE',
        ],
        [
          'extra field',
          { method: 'POST', url: '/v1/jobs', headers: auth(d().alice), payload: { type: 'sleep', x: 1 } },
          400,
          'TANDEM_ERR_INVALID_ARGUMENT',
        ],
        [
          'params out of range',
          {
            method: 'POST',
            url: '/v1/jobs',
            headers: auth(d().alice),
            payload: { type: 'sleep', params: { ms: -1 } },
          },
          400,
          'TANDEM_ERR_INVALID_ARGUMENT',
        ],
        ['bad id', { url: '/v1/jobs/nope', headers: auth(d().alice) }, 400, 'TANDEM_ERR_INVALID_ARGUMENT'],
        [
          'missing job',
          { url: '/v1/jobs/job_00000000000000000000/result', headers: auth(d().alice) },
          404,
          'TANDEM_ERR_NOT_FOUND',
        ],
        [
          'bad query',
          { url: '/v1/jobs?limit=abc', headers: auth(d().alice) },
          400,
          'TANDEM_ERR_INVALID_ARGUMENT',
        ],
      ];
      for (const [what, req, status, code] of cases) {
        const r = await d().inject(req);
        assert.equal(r.statusCode, status, `${what}: ${r.body}`);
        assert.equal(errorCode(r), code, what);
      }
    });

    it('job types come with parameter schemas (none empty)', async () => {
      const r = await d().inject({ url: '/v1/job-types', headers: auth(d().alice) });
      const types = r.json<{ types: { name: string; params: { properties?: Record<string, unknown> } }[] }>()
        .types;
      for (const want of ['gemm', 'sleep', 'md', 'option', 'var']) {
        const t = types.find((x) => x.name === want);
        assert.ok(t, `${want} listed`);
        assert.ok(Object.keys(t.params.properties ?? {}).length > 0, `${want} has parameter properties`);
      }
    });

    it('the generated typed client (openapi-fetch) submits, reads, waits, cancels and gets typed errors', async () => {
      // openapi-fetch's requests, answered by inject(): the same client code a user runs over HTTP.
      const viaInject = async (req: Request): Promise<Response> => {
        const url = new URL(req.url);
        const body = req.body ? await req.text() : undefined;
        const r = await d().inject({
          method: req.method as 'GET',
          url: url.pathname + url.search,
          headers: Object.fromEntries(req.headers),
          ...(body === undefined ? {} : { payload: body }),
        });
        const headers = new Headers();
        for (const [k, v] of Object.entries(r.headers)) if (v !== undefined) headers.set(k, String(v));
        return new Response(r.rawPayload, { status: r.statusCode, headers });
      };
      const api = createClient<paths>({
        baseUrl: 'http://tandem.test',
        headers: auth(d().alice),
        fetch: viaInject,
      });
      const waited = await api.POST('/v1/jobs', {
        params: { query: { wait: '20' } },
        body: { type: 'sleep', params: { ms: 5 } },
      });
      assert.equal(waited.data?.state, 'succeeded');
      assert.deepEqual(waited.data?.result, { sleptMs: 5, steps: 1 });
      const id = waited.data!.id;
      assert.equal((await api.GET('/v1/jobs/{id}', { params: { path: { id } } })).data?.hasResult, true);
      const result = await api.GET('/v1/jobs/{id}/result', { params: { path: { id } } });
      assert.deepEqual(result.data, { id, result: { sleptMs: 5, steps: 1 } });
      const listed = await api.GET('/v1/jobs', { params: { query: { limit: '5' } } });
      assert.ok(listed.data?.jobs?.some((j) => j.id === id));
      const cancel = await api.POST('/v1/jobs/{id}/cancel', { params: { path: { id } } });
      assert.equal(cancel.data?.outcome, 'final');
      const missing = await api.GET('/v1/jobs/{id}', {
        params: { path: { id: 'job_00000000000000000000' } },
      });
      assert.equal(missing.response.status, 404);
      assert.equal(missing.error?.error.code, 'TANDEM_ERR_NOT_FOUND');
    });

    it('/openapi.json validates (swagger-parser, redocly lint: 0 errors) and names every operation', async () => {
      const doc = (await d().inject({ url: '/openapi.json' })).json<{
        openapi: string;
        paths: Record<
          string,
          Record<string, { operationId?: string; requestBody?: unknown; responses: Record<string, unknown> }>
        >;
      }>();
      assert.equal(doc.openapi, '3.1.0');
      const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
      await SwaggerParser.validate(structuredClone(doc) as never);
      const ids = new Set<string>();
      for (const [path, ops] of Object.entries(doc.paths))
        for (const [method, op] of Object.entries(ops)) {
          assert.ok(op.operationId, `${method} ${path} has an operationId`);
          ids.add(op.operationId);
          assert.ok(
            Object.keys(op.responses).some((s) => s === 'default' || s.startsWith('4')),
            `${method} ${path} documents its errors`,
          );
          const contents = [
            op.requestBody,
            ...Object.entries(op.responses)
              .filter(([s]) => s.startsWith('2'))
              .map(([, r]) => r),
          ].flatMap((x) =>
            Object.values((x as { content?: Record<string, object> } | undefined)?.content ?? {}),
          );
          assert.ok(
            contents.some((c) => 'example' in c || 'examples' in c),
            `${method} ${path} has an example of its request or success answer`,
          );
        }
      for (const op of [
        'submitJob',
        'getJob',
        'listJobs',
        'cancelJob',
        'getJobResult',
        'getJobTrace',
        'listJobTypes',
      ])
        assert.ok(ids.has(op), op);
      const dir = mkdtempSync(join(tmpdir(), 'tandem-openapi-'));
      try {
        const file = join(dir, 'openapi.json');
        writeFileSync(file, JSON.stringify(doc));
        const cli = join(process.cwd(), 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
        const lint = spawnSync(process.execPath, [cli, 'lint', file, '--format', 'json'], {
          encoding: 'utf8',
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        });
        const report = JSON.parse(lint.stdout) as { totals: { errors: number }; problems: unknown[] };
        assert.equal(report.totals.errors, 0, JSON.stringify(report.problems).slice(0, 2000));
        assert.equal(lint.status, 0, lint.stderr);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
