/**
 * Every command line the project already uses keeps parsing on the commander CLI: the ones the tests,
 * benchmarks, scripts and docs spawn, and the container args in deploy/*.yaml. Parsed in-process up to
 * the action (a preAction hook stops there), so nothing runs; the parsed options are checked where the
 * meaning matters. Also: the argv rebuilt for the serve supervisor parses back to the same options.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommanderError, type Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import { givenArgv } from '../../src/cli/cli-options.js';
import { buildProgram } from '../../src/cli/program.js';

class Stopped extends Error {
  constructor(
    readonly path: string,
    readonly opts: Record<string, unknown>,
    readonly args: unknown[],
    readonly cmd: Command,
  ) {
    super('stopped before the action');
  }
}

/** Parses `argv` and returns the command it reached with its options, without running it. */
async function parseOnly(argv: readonly string[]): Promise<Stopped> {
  const program = buildProgram(() => undefined);
  program.hook('preAction', (_root, cmd) => {
    const path: string[] = [];
    for (let c: Command | null = cmd; c && c !== program; c = c.parent) path.unshift(c.name());
    throw new Stopped(path.join(' '), cmd.opts(), [...cmd.processedArgs], cmd);
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof Stopped) return e;
    if (e instanceof CommanderError) assert.fail(`tandem ${argv.join(' ')}: ${e.message}`);
    throw e;
  }
  return assert.fail(`tandem ${argv.join(' ')} reached no action`);
}

const LINES: ReadonlyArray<readonly string[]> = [
  ['devices', '--json'],
  ['devices', '--backends', 'cpu,webgpu', '--no-calibrate'],
  ['demo'],
  ['run', 'gemm', '--n', '2048', '--dtype', 'f32', '--device', 'cuda0', '--trace', 'out.json', '--json'],
  ['run', 'gemm', '--reps', '5', '--precision', 'tf32'],
  [
    'run',
    'md',
    '--preset',
    'lammps-lj',
    '--steps',
    '10',
    '--neigh-every',
    '5',
    '--neigh-check',
    '--cells',
    '4,4,5',
  ],
  [
    'run',
    'option',
    '--type',
    'asian',
    '--steps',
    '12',
    '--paths',
    '1000',
    '--antithetic',
    'false',
    '--tasks',
    '4',
  ],
  ['run', 'var', '--portfolio', 'p.json', '--horizon', '0.1', '--confidence', '0.95', '--scenarios', '1000'],
  ['bench', 'overhead', '--tasks', '1000', '--backends', 'cpu', '--scheduler', 'dmda', '--json'],
  [
    'bench',
    'gemm',
    '--device',
    'cuda',
    '--n',
    '8192',
    '--dtype',
    'bf16',
    '--precision',
    'tf32',
    '--reps',
    '5',
  ],
  ['bench', 'gemm', '--device', 'webgpu', '--n', '4096', '--rounds', '3'],
  ['bench', 'sched', '--table', 'all', '--skip-mixed', '--nt', '20', '--cpus', '4', '--gpus', '1'],
  ['bench', 'sched', '--real', '--device', 'cuda', '--n', '8192', '--tile', '2048', '--scheduler', 'dmdas'],
  ['models', '--cache-dir', 'c', '--op', 'gemm', '--json'],
  ['serve', '--port', '0', '--data-dir', 'd', '--backends', 'none', '--max-running', '1', '--json'],
  ['serve', '--no-supervise', '--no-calibrate', '--host', '0.0.0.0', '--web-dir', 'w'],
  [
    'serve',
    '--queue',
    'redis://127.0.0.1:6379',
    '--pg',
    'postgres://p',
    '--port',
    '8080',
    '--reconcile-ms',
    '500',
  ],
  ['submit', 'sleep', '--param', 'ms=50', '--param', 'steps=2', '--wait', '--json'],
  [
    'submit',
    'sleep',
    '-p',
    'ms=60000',
    '--priority',
    '3',
    '--json',
    '--idempotency-key',
    'k',
    '--params',
    '{}',
  ],
  ['submit', 'gemm', '--param', 'n=999999', '--json'],
  ['jobs', '--json', '--state', 'queued', '--limit', '5', '--tenant', 't'],
  ['status', 'job_1'],
  ['cancel', 'job_1', '--json'],
  ['trace', 'job_1', '-o', 'f.json'],
  ['types', '--json'],
  ['keys', 'create', 'carol', '--weight', '2', '--json'],
  [
    'keys',
    'create',
    'bob',
    '--role',
    'admin',
    '--max-jobs',
    '3',
    '--max-memory',
    '1e9',
    '--max-queued',
    '10',
    '--max-timeout',
    '3600',
    '--label',
    'x',
  ],
  ['keys', 'list'],
  ['keys', 'revoke', 'kid'],
  // test/scale/harness.ts, bench/scale-common.ts
  [
    'agent',
    '--queue',
    'redis://r',
    '--pg',
    'postgres://p',
    '--name',
    'a',
    '--backends',
    'none',
    '--prefix',
    'x',
    '--concurrency',
    '8',
  ],
  [
    'autoscale',
    '--queue',
    'redis://r',
    '--pg',
    'postgres://p',
    '--min',
    '0',
    '--max',
    '4',
    '--agent-args',
    '--backends cpu',
  ],
];

void test('every command line the project uses still parses', async () => {
  for (const argv of LINES) await parseOnly(argv);
});

void test('parsed values mean what they meant', async () => {
  const submit = await parseOnly(['submit', 'sleep', '-p', 'ms=50', '--param', 'steps=2', '--priority', '3']);
  assert.equal(submit.path, 'submit');
  assert.deepEqual(submit.args, ['sleep']);
  assert.deepEqual(submit.opts['param'], ['ms=50', 'steps=2']);
  assert.equal(submit.opts['priority'], 3);
  const gemm = await parseOnly(['run', 'gemm']);
  assert.deepEqual(
    {
      n: gemm.opts['n'],
      dtype: gemm.opts['dtype'],
      reps: gemm.opts['reps'],
      precision: gemm.opts['precision'],
    },
    { n: 1024, dtype: 'f32', reps: 3, precision: 'default' },
  );
  const md = await parseOnly(['run', 'md', '--neigh-check', '--shift', 'false', '--cells', '4,4,5']);
  assert.equal(md.opts['neighCheck'], true);
  assert.equal(md.opts['shift'], false);
  assert.deepEqual(md.opts['cells'], [4, 4, 5]);
  const serve = await parseOnly(['serve', '--no-supervise', '--no-calibrate']);
  assert.equal(serve.opts['calibrate'], false);
  assert.equal(serve.opts['supervise'], false);
  const client = await parseOnly(['jobs']);
  assert.equal(client.opts['limit'], 20);
});

void test('the argv rebuilt for the serve supervisor parses back to the same options', async () => {
  const argv = [
    'serve',
    '--port',
    '0',
    '--data-dir',
    'd',
    '--backends',
    'none',
    '--max-running',
    '1',
    '--no-calibrate',
    '--json',
  ];
  const first = await parseOnly(argv);
  const rebuilt = givenArgv(first.cmd);
  assert.deepEqual(rebuilt, [
    '--json',
    '--port',
    '0',
    '--data-dir',
    'd',
    '--backends',
    'none',
    '--no-calibrate',
    '--max-running',
    '1',
  ]);
  const again = await parseOnly(['serve', ...rebuilt]);
  assert.deepEqual(again.opts, first.opts);
});

void test('the container args in deploy/*.yaml parse', async () => {
  const dir = join(process.cwd(), 'deploy');
  let seen = 0;
  const visit = async (node: unknown): Promise<void> => {
    if (Array.isArray(node)) for (const n of node) await visit(n);
    else if (node && typeof node === 'object') {
      const rec = node as Record<string, unknown>;
      if (Array.isArray(rec['args']) && typeof rec['image'] === 'string') {
        // $(VAR) is Kubernetes' substitution: any URL stands for it here.
        const args = (rec['args'] as string[]).map((a) =>
          a.replace(/^\$\([A-Z_]+\)$/, 'redis://placeholder'),
        );
        await parseOnly(args);
        seen++;
      }
      for (const v of Object.values(rec)) await visit(v);
    }
  };
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.yaml')))
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) await visit(doc.toJS());
  assert.ok(seen >= 3, `found ${seen} container args lists`);
});
