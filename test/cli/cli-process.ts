/**
 * Running the built `tandem` CLI as a child process for tests: exit code, output, wall time, and which
 * compiled modules it loaded (through a module resolve hook), so a test can tell that `--help` loaded
 * no runtime and no device code.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  /** file: URLs the process resolved (only when asked for). */
  readonly loaded: readonly string[];
}

let hookDir: string | null = null;

/** A `--import` module that records every resolved file: URL into the file named by TANDEM_TEST_LOADS. */
function loadRecorder(): string {
  if (hookDir) return join(hookDir, 'register.mjs');
  hookDir = mkdtempSync(join(tmpdir(), 'tandem-loads-'));
  writeFileSync(
    join(hookDir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (r.url.startsWith('file:') && process.env.TANDEM_TEST_LOADS) appendFileSync(process.env.TANDEM_TEST_LOADS, r.url + '\\n');
  return r;
}
`,
  );
  writeFileSync(
    join(hookDir, 'register.mjs'),
    `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`,
  );
  return join(hookDir, 'register.mjs');
}

export interface CliOptions {
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  /** Record the modules it loads. */
  readonly recordLoads?: boolean;
  /** Kill it after this long (the test then sees code null). */
  readonly timeoutMs?: number;
}

export function runCli(args: readonly string[], o: CliOptions = {}): Promise<CliRun> {
  const loadsFile = o.recordLoads ? join(mkdtempSync(join(tmpdir(), 'tandem-loads-')), 'loads.txt') : null;
  if (loadsFile) writeFileSync(loadsFile, '');
  const nodeArgs = loadsFile ? ['--import', pathToFileURL(loadRecorder()).href] : [];
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, MAIN, ...args], {
    cwd: o.cwd ?? process.cwd(),
    env: { ...process.env, ...(o.env ?? {}), ...(loadsFile ? { TANDEM_TEST_LOADS: loadsFile } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      const loaded = loadsFile ? readFileSync(loadsFile, 'utf8').split('\n').filter(Boolean) : [];
      resolve({ code, stdout, stderr, ms: performance.now() - t0, loaded });
    });
  });
}

/** Median wall time of a bare `node -e ''` here and now: what process start alone costs on this machine. */
export async function nodeStartMs(runs = 3): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
      c.once('error', reject);
      c.once('close', () => resolve());
    });
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}
