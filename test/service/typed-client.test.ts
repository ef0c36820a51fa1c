/**
 * The typed client: openapi-fetch over the types openapi-typescript generated from /openapi.json
 * (src/service/client/openapi-types.ts), against a listening service. The calls type-check against the
 * document (a wrong path, body or field would not compile), and they work: submit, get, result,
 * cancel, and a catalogue error as the typed error body. The checked-in types are current.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import createClient from 'openapi-fetch';
import type { paths } from '../../src/service/client/openapi-types.js';
import { testService } from './helpers.js';

void test('the generated types are current (scripts/gen-client.mjs --check)', () => {
  const r = spawnSync(process.execPath, ['scripts/gen-client.mjs', '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr + r.stdout);
});

void test('openapi-fetch with the generated types: submit, get, result, cancel, errors', async () => {
  const t = await testService({ maxRunningJobs: 1 });
  try {
    const baseUrl = await t.svc.app.listen({ host: '127.0.0.1', port: 0 });
    const api = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${t.admin}` } });

    const submitted = await api.POST('/v1/jobs', { body: { type: 'sleep', params: { ms: 20 } } });
    assert.equal(submitted.response.status, 202);
    const id = submitted.data!.id;
    assert.match(id, /^job_[0-9a-f]{20}$/);

    let state = submitted.data!.state;
    for (let i = 0; i < 500 && state !== 'succeeded'; i++) {
      const got = await api.GET('/v1/jobs/{id}', { params: { path: { id } } });
      state = got.data!.state;
      if (state !== 'succeeded') await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(state, 'succeeded');
    const result = await api.GET('/v1/jobs/{id}/result', { params: { path: { id } } });
    assert.deepEqual(result.data, { id, result: { sleptMs: 20, steps: 1 } });

    const long = await api.POST('/v1/jobs', { body: { type: 'sleep', params: { ms: 60_000, steps: 600 } } });
    const cancelled = await api.POST('/v1/jobs/{id}/cancel', { params: { path: { id: long.data!.id } } });
    assert.ok(['cancelled', 'cancelling'].includes(cancelled.data!.outcome ?? ''), cancelled.data?.outcome);

    const missing = await api.GET('/v1/jobs/{id}/result', {
      params: { path: { id: 'job_00000000000000000000' } },
    });
    assert.equal(missing.response.status, 404);
    assert.equal(missing.error?.error.code, 'TANDEM_ERR_NOT_FOUND');

    const types = await api.GET('/v1/job-types');
    assert.ok(types.data?.types?.some((x) => x.name === 'option'));
  } finally {
    await t.close();
  }
});
