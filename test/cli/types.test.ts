/**
 * `tandem types` from this build's registry (no service) and the schema summary it prints; the same
 * command against a running service is in test/service/cli.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatTypes, schemaSummary } from '../../src/cli/types-command.js';
import { runCli } from './cli-process.js';

void test(
  'tandem types --local lists every built-in job type with its schema',
  { timeout: 30_000 },
  async () => {
    // TANDEM_URL set but --local: the registry of this build, no request.
    const r = await runCli(['types', '--local', '--json'], { env: { TANDEM_URL: 'http://127.0.0.1:9' } });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      source: string;
      types: { name: string; params: { type?: string } }[];
    };
    assert.equal(out.source, 'local');
    const names = out.types.map((t) => t.name);
    for (const n of ['gemm', 'sleep', 'md', 'option', 'var']) assert.ok(names.includes(n), `${n} listed`);
    for (const t of out.types) assert.equal(t.params.type, 'object', `${t.name} has an object schema`);
    const human = await runCli(['types'], { env: { TANDEM_URL: '' } });
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^gemm — /m);
    assert.match(human.stdout, /\(from local\)/);
  },
);

void test('tandem types against an unreachable service fails promptly with TANDEM_ERR_UNAVAILABLE', async () => {
  const r = await runCli(['types', '--url', 'http://127.0.0.1:9'], { timeoutMs: 20_000 });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /TANDEM_ERR_UNAVAILABLE: cannot reach the service at http:\/\/127\.0\.0\.1:9/);
});

void test('schema summary and listing', () => {
  assert.equal(schemaSummary({ type: 'integer', minimum: 1, maximum: 8192 }), 'integer 1..8192');
  assert.equal(schemaSummary({ enum: ['f32', 'f64'] }), '"f32" | "f64"');
  assert.equal(schemaSummary({ type: 'number', exclusiveMinimum: 0 }), 'number >0..');
  assert.equal(schemaSummary({ type: 'array', items: { type: 'integer' } }), 'array of integer');
  assert.equal(
    schemaSummary({ oneOf: [{ type: 'integer' }, { type: 'array', items: { type: 'integer' } }] }),
    'integer | array of integer',
  );
  const text = formatTypes([
    {
      name: 'gemm',
      description: 'C = A·B',
      params: {
        type: 'object',
        required: ['n'],
        properties: {
          n: { type: 'integer', minimum: 1, default: 1024, description: 'size' },
          dtype: { enum: ['f32'] },
        },
      },
    },
    { name: 'sleep', description: 'waits', params: { type: 'object' } },
  ]);
  assert.match(text, /^gemm — C = A·B$/m);
  assert.match(text, /^ {2}n {6}integer 1\.\. \(required\) \(default 1024\) {2}size$/m);
  assert.match(text, /^ {2}dtype {2}"f32"$/m);
  assert.match(text, /^sleep — waits\n {2}\(no parameter schema published\)$/m);
});
