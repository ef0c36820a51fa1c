/**
 * `tandem <cmd> --help` for EVERY command and subcommand of the tree (read from the program itself, so
 * a new command is covered without touching this test): exit 0, within 1 s of what a bare node start
 * costs here, usage with flags, and nothing run — no device line, no server, and no runtime, device,
 * kernel or workload-runner module even loaded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { nodeStartMs, runCli } from './cli-process.js';

/** Every command path: [], ['devices'], ['run'], ['run', 'gemm'] ... */
function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return [prefix, ...cmd.commands.flatMap((c) => commandPaths(c, [...prefix, c.name()]))];
}

/**
 * Modules that would mean something ran: the runtime, device backends (the contracts module
 * devices/device.js, constants and types only, may be read), kernels, workload runners, the server.
 */
const FORBIDDEN =
  /\/dist\/src\/(runtime|kernels|memory)\/|\/dist\/src\/devices\/(?!device\.js$)|\/dist\/src\/workloads\/[^/]+\/run\.js|\/dist\/src\/service\/(server|service)\.js|\/dist\/bench\//;

/** Leaves that read no environment variable at all. */
const NO_ENV = new Set(['models', 'autoscale']);
/** Long-running processes that print log lines, not a result (no --json). */
const NO_JSON = new Set(['agent', 'autoscale']);

void test(
  '--help on every command and subcommand prints usage and runs nothing',
  { timeout: 180_000 },
  async () => {
    const paths = commandPaths(buildProgram(() => undefined));
    assert.ok(paths.length >= 20, `the tree has ${paths.length} commands`);
    for (const must of [
      ['serve'],
      ['run', 'gemm'],
      ['run', 'option'],
      ['run', 'var'],
      ['types'],
      ['keys', 'create'],
    ])
      assert.ok(
        paths.some((p) => p.join(' ') === must.join(' ')),
        `${must.join(' ')} is in the tree`,
      );
    // A loaded machine starts node slowly; that is not the CLI's cost.
    const limitMs = 1000 + Math.max(0, (await nodeStartMs()) - 150);
    const program = buildProgram(() => undefined);
    for (const path of paths) {
      const shown = `tandem ${[...path, '--help'].join(' ')}`;
      const r = await runCli([...path, '--help'], { recordLoads: true, timeoutMs: 20_000 });
      assert.equal(r.code, 0, `${shown} exits 0: ${r.stderr}`);
      // Timed without the load recorder; the best of three, as these shared machines stall at times.
      const times: number[] = [];
      for (let i = 0; i < 3 && !(Math.min(...times) < limitMs); i++)
        times.push((await runCli([...path, '--help'], { timeoutMs: 20_000 })).ms);
      const ms = Math.min(...times);
      assert.ok(ms < limitMs, `${shown} took ${ms.toFixed(0)} ms (limit ${limitMs.toFixed(0)} ms)`);
      assert.match(r.stdout, new RegExp(`^Usage: tandem${path.map((w) => ` ${w}`).join('')}`), shown);
      assert.match(r.stdout, /Options:/, shown);
      assert.equal(r.stderr, '', `${shown} writes nothing on stderr`);
      assert.doesNotMatch(
        r.stdout,
        /\[tandem\]|cpu0|webgpu0|listening|tandem service on/,
        `${shown}: no device, no server`,
      );
      assert.ok(r.loaded.length > 0, 'the load recorder works');
      const ran = r.loaded.filter((u) => FORBIDDEN.test(u));
      assert.deepEqual(ran, [], `${shown} loaded no runtime, device or server module`);
      let at = program;
      for (const w of path) at = at.commands.find((c) => c.name() === w)!;
      if (at.commands.length === 0 && path.length > 0) {
        if (!NO_JSON.has(path.join(' '))) assert.match(r.stdout, /--json/, `${shown} lists --json`);
        if (!NO_ENV.has(path.join(' ')))
          assert.match(
            r.stdout,
            /Environment:\n\s+TANDEM_[A-Z_]+/,
            `${shown} lists the environment it reads`,
          );
      }
    }
  },
);

void test('help shows defaults and the environment variables a command reads', async () => {
  const gemm = await runCli(['run', 'gemm', '--help']);
  assert.match(gemm.stdout, /--n <n>\s+matrix size \(default: 1024\)/);
  assert.match(gemm.stdout, /--dtype <dtype>\s+element type \(default: "f32"\)/);
  const option = await runCli(['run', 'option', '--help']);
  assert.match(option.stdout, /--paths <value>\s+Monte Carlo paths \(default: 1000000\)/);
  const submit = await runCli(['submit', '--help']);
  assert.match(submit.stdout, /--url <url>.*\n?.*env:\s*TANDEM_URL/);
  assert.match(submit.stdout, /TANDEM_KEY/);
  const serve = await runCli(['serve', '--help']);
  for (const v of ['TANDEM_PORT', 'TANDEM_DATA_DIR', 'TANDEM_BACKENDS', 'TANDEM_SUPERVISE'])
    assert.match(serve.stdout, new RegExp(v), `serve --help names ${v}`);
  const version = await runCli(['--version']);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  // `tandem help <cmd>` is the same help.
  const viaHelp = await runCli(['help', 'serve']);
  assert.equal(viaHelp.code, 0);
  assert.equal(viaHelp.stdout, serve.stdout);
});
