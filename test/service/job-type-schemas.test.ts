/**
 * The md, option and var parameter schemas published at /v1/job-types are made from the same field
 * descriptions as the workloads' validators: every bound the schema states is one the validator
 * enforces (a value just past it is refused by both), every default it states is the validator's
 * default, its example is accepted, and a typo is named.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { EXAMPLE_PORTFOLIO, WORKLOAD_JOB_TYPES } from '../../src/workloads/index.js';
import { validateMdParams } from '../../src/workloads/md/params.js';
import { validateOptionParams, validateVarParams } from '../../src/workloads/risk/params.js';
import { testService } from './helpers.js';

interface PropSchema {
  type?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
  description?: string;
}

const validators = { md: validateMdParams, option: validateOptionParams, var: validateVarParams };
/** What each type needs besides the field under test. */
const base: Record<string, Record<string, unknown>> = {
  md: {},
  option: {},
  var: { portfolio: EXAMPLE_PORTFOLIO },
};

/** Values just past each bound the schema states. */
function pastBounds(p: PropSchema): number[] {
  const out: number[] = [];
  const step = p.type === 'integer' ? 1 : 1e-6;
  if (p.minimum !== undefined) out.push(p.minimum - step);
  if (p.exclusiveMinimum !== undefined) out.push(p.exclusiveMinimum);
  if (p.maximum !== undefined) out.push(p.maximum + step * Math.max(1, Math.abs(p.maximum) * 1e-9));
  if (p.exclusiveMaximum !== undefined) out.push(p.exclusiveMaximum);
  return out;
}

void test('md, option and var schemas: bounds and defaults are the validators’, examples accepted, typos named', async () => {
  const t = await testService({}, null); // API only: accepted jobs wait, nothing runs
  try {
    const res = await t.svc.app.inject({ url: '/v1/job-types', headers: t.auth() });
    const types = res.json<{
      types: { name: string; params: { properties: Record<string, PropSchema>; examples?: unknown[] } }[];
    }>().types;
    let bounds = 0;
    let defaults = 0;
    for (const name of ['md', 'option', 'var'] as const) {
      const schema = types.find((x) => x.name === name)?.params;
      assert.ok(schema, `${name} listed`);
      assert.deepEqual(schema, JSON.parse(JSON.stringify(WORKLOAD_JOB_TYPES[name].paramsSchema)));
      const validate = validators[name];
      for (const [key, prop] of Object.entries(schema.properties)) {
        assert.ok(prop.description, `${name}.${key} is described`);
        for (const bad of pastBounds(prop)) {
          bounds++;
          const params = { ...base[name], [key]: bad };
          const r = await t.svc.app.inject({
            method: 'POST',
            url: '/v1/jobs',
            headers: t.auth(),
            payload: { type: name, params },
          });
          assert.equal(r.statusCode, 400, `${name}.${key}=${bad} refused by the schema: ${r.body}`);
          assert.throws(
            () => validate(params),
            (e: unknown) => isTandemError(e, 'TANDEM_ERR_INVALID_ARGUMENT'),
            `${name}.${key}=${bad} refused by the validator`,
          );
        }
        if (prop.default !== undefined) {
          defaults++;
          assert.deepEqual(
            validate({ ...base[name], [key]: prop.default }),
            validate(base[name]),
            `${name}.${key}: the schema's default is the validator's`,
          );
        }
      }
      for (const example of schema.examples ?? []) {
        const r = await t.svc.app.inject({
          method: 'POST',
          url: '/v1/jobs',
          headers: t.auth(),
          payload: { type: name, params: example },
        });
        assert.equal(r.statusCode, 202, `${name} example accepted: ${r.body}`);
      }
    }
    assert.ok(bounds > 30, `${bounds} bounds checked`);
    assert.ok(defaults > 15, `${defaults} defaults checked`);
    const typo = await t.svc.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: t.auth(),
      payload: { type: 'md', params: { temprature: 2 } },
    });
    const err = typo.json<{ error: { code: string; message: string } }>().error;
    assert.equal(err.code, 'TANDEM_ERR_INVALID_ARGUMENT');
    assert.match(err.message, /params\/temprature is not a known parameter/);
  } finally {
    await t.close();
  }
});

void test("device 'auto' (the schema's default, filled in at submit) leaves the choice to the hardware rules", async () => {
  const { loadWorkloadJobTypes } = await import('../../src/service/jobs/types/workloads.js');
  const option = (await loadWorkloadJobTypes(() => undefined)).find((t) => t.name === 'option')!;
  // A runtime with no workers: the workload refuses, naming the device kind it was asked for.
  const rt = { kernels: { get: () => ({ impls: new Set(['cpu', 'cuda']) }) }, workers: [], devices: [] };
  const deviceAsked = async (params: Record<string, unknown>): Promise<unknown> => {
    const ctx = {
      jobId: 'job_1',
      tenantId: 't',
      attempt: 1,
      params,
      signal: new AbortController().signal,
      rt: rt as never,
      placement: { device: 'cuda', reason: 'hardware rule latency=cuda' },
      tags: {},
      progress: () => undefined,
      span: () => undefined,
    };
    const e = await option.run(ctx).then(
      () => assert.fail('ran without a device'),
      (err: unknown) => err,
    );
    assert.ok(isTandemError(e, 'TANDEM_ERR_NO_DEVICE'), String(e));
    return e.details['device'];
  };
  assert.equal(await deviceAsked({ paths: 1000, device: 'auto' }), 'cuda');
  assert.equal(await deviceAsked({ paths: 1000 }), 'cuda');
  assert.equal(await deviceAsked({ paths: 1000, device: 'cpu' }), 'cpu');
});
