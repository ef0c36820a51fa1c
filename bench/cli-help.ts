/**
 * `tandem <cmd> --help` for every command of the tree: wall time (median of --reps runs) beside a bare
 * `node -e ''` start on the same machine in the same run, and the issue's cases (help that ran things,
 * `run gemm --device tpu` that never ended) beside an older build of the CLI when --before names its
 * main.js. Processes still running at --cap-ms are killed and shown as such.
 *
 * `node dist/bench/cli-help.js [--before /path/to/old/dist/src/cli/main.js] [--reps 3] [--cap-ms 10000]`
 * Never runs the old `serve --help` (it would start a server on port 8080).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { intOption, parse, print, table } from '../src/cli/output.js';
import { buildProgram } from '../src/cli/program.js';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

interface Timed {
  readonly ms: number;
  /** Exit code, or 'killed' past the cap. */
  readonly exit: number | 'killed';
}

function timeRun(args: readonly string[], capMs: number, cwd: string): Promise<Timed> {
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { stdio: 'ignore', cwd });
  const timer = setTimeout(() => child.kill('SIGKILL'), capMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - t0, exit: code ?? 'killed' });
    });
  });
}

async function median(args: readonly string[], reps: number, capMs: number, cwd: string): Promise<Timed> {
  const runs: Timed[] = [];
  for (let i = 0; i < reps; i++) runs.push(await timeRun(args, capMs, cwd));
  runs.sort((a, b) => a.ms - b.ms);
  return runs[Math.floor(reps / 2)]!;
}

function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return [prefix, ...cmd.commands.flatMap((c) => commandPaths(c, [...prefix, c.name()]))];
}

const ISSUE_CASES: readonly (readonly string[])[] = [
  ['run', 'gemm', '--help'],
  ['run', 'option', '--help'],
  ['devices', '--help'],
  ['run', 'gemm', '--device', 'tpu'],
];

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    before: { type: 'string' },
    reps: { type: 'string' },
    'cap-ms': { type: 'string' },
  });
  const reps = intOption(values['reps'], 'reps', 3, 1, 50);
  const capMs = intOption(values['cap-ms'], 'cap-ms', 10_000, 100, 600_000);
  const before = typeof values['before'] === 'string' ? values['before'] : null;
  // Commands that write (.tandem/ caches) do it in a scratch directory.
  const cwd = mkdtempSync(join(tmpdir(), 'tandem-cli-bench-'));
  try {
    const nodeStart = await median(['-e', ''], reps, capMs, cwd);
    const help: { command: string; ms: number; exit: number | 'killed' }[] = [];
    for (const path of commandPaths(buildProgram(() => undefined))) {
      const r = await median([MAIN, ...path, '--help'], reps, capMs, cwd);
      help.push({ command: ['tandem', ...path, '--help'].join(' '), ...r });
    }
    const cases: { command: string; now: Timed; before: Timed | null }[] = [];
    for (const c of ISSUE_CASES)
      cases.push({
        command: ['tandem', ...c].join(' '),
        now: await timeRun([MAIN, ...c], capMs, cwd),
        before: before ? await timeRun([before, ...c], capMs, cwd) : null,
      });
    const worst = help.reduce((a, b) => (b.ms > a.ms ? b : a));
    const result = { nodeStartMs: nodeStart.ms, reps, capMs, help, worst, cases };
    const fmt = (t: Timed): string =>
      `${t.ms.toFixed(0)} ms, ${t.exit === 'killed' ? 'killed at the cap' : `exit ${t.exit}`}`;
    print(values['json'] === true, result, () =>
      [
        `bare node start: ${nodeStart.ms.toFixed(0)} ms (median of ${reps})`,
        table([
          ['COMMAND', 'MS (MEDIAN)', 'EXIT'],
          ...help.map((h) => [h.command, h.ms.toFixed(0), String(h.exit)]),
        ]),
        `slowest: ${worst.command} ${worst.ms.toFixed(0)} ms (${(worst.ms - nodeStart.ms).toFixed(0)} ms above a bare node start)`,
        table([
          ['CASE', 'NOW', before ? 'BEFORE' : ''],
          ...cases.map((c) => [c.command, fmt(c.now), c.before ? fmt(c.before) : '']),
        ]),
      ].join('\n\n'),
    );
    return help.every((h) => h.exit === 0) ? 0 : 1;
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
