/**
 * Throwaway Redis and PostgreSQL servers on loopback for the scale tests and benchmarks: a free port,
 * no persistence, a temp directory, stopped at the end. PostgreSQL refuses to run as root, so as root
 * it runs as the `postgres` user (runuser) on a data directory owned by it. fsync is off (a crash of the
 * machine may lose data, a crash of the server may not: commits stay synchronous). When a binary is missing,
 * `reason` says which, and the tests skip with it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Server {
  readonly url: string;
  stop(): Promise<void>;
  /** Stops the server abruptly, keeps it down `downMs`, starts it again on the same port and data. */
  bounce?(downMs: number): Promise<void>;
}

export type Started = { ok: true; server: Server } | { ok: false; reason: string };

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function which(bin: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Servers still running when this process exits (a failed test or benchmark) are stopped here. */
const leftovers = new Set<() => void>();
process.once('exit', () => {
  for (const f of leftovers) f();
});

function stopChild(p: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGTERM');
    setTimeout(() => p.kill('SIGKILL'), 3000).unref();
  });
}

export async function startRedis(fixedPort?: number): Promise<Started> {
  const bin = which('redis-server');
  if (!bin) return { ok: false, reason: 'redis-server is not installed (apt-get install redis-server)' };
  const port = fixedPort ?? (await freePort());
  const p = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  const kill = () => void p.kill('SIGKILL');
  leftovers.add(kill);
  p.once('exit', () => leftovers.delete(kill));
  for (let i = 0; i < 100; i++) {
    const r = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
    if (r.stdout?.trim() === 'PONG') return { ok: true, server: { url, stop: () => stopChild(p) } };
    await sleep(50);
  }
  await stopChild(p);
  return { ok: false, reason: `redis-server did not answer on port ${port}` };
}

function pgBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'pg_ctl'))) return join(root, v, 'bin');
  return null;
}

export async function startPostgres(): Promise<Started> {
  const bin = pgBinDir();
  if (!bin) return { ok: false, reason: 'PostgreSQL is not installed (apt-get install postgresql)' };
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'tandem-pg-'));
  const data = join(dir, 'data');
  if (asRoot) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (id.status !== 0) return { ok: false, reason: 'running as root and there is no postgres user' };
    chownSync(dir, Number(id.stdout.trim()), Number(gid.stdout.trim()));
  }
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
  const init = run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  if (init.status !== 0) return { ok: false, reason: `initdb failed: ${init.stderr.slice(0, 300)}` };
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = run('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
  if (start.status !== 0) return { ok: false, reason: `pg_ctl start failed: ${start.stderr.slice(0, 300)}` };
  const halt = () => {
    run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
    rmSync(dir, { recursive: true, force: true });
  };
  leftovers.add(halt);
  return {
    ok: true,
    server: {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      bounce: async (downMs: number) => {
        run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
        await sleep(downMs);
        run('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
      },
      stop: () => {
        leftovers.delete(halt);
        halt();
        return Promise.resolve();
      },
    },
  };
}

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

/** Starts `tandem agent` (no devices: sleep-type jobs only) and resolves once it says it is ready. */
export function spawnAgent(
  redisUrl: string,
  pgUrl: string,
  name: string,
  prefix: string,
  extra: string[] = [],
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      'agent',
      '--queue',
      redisUrl,
      '--pg',
      pgUrl,
      '--name',
      name,
      '--backends',
      'none',
      '--prefix',
      prefix,
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('ready')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`agent ${name} exited ${code}: ${out}`)));
  });
}
