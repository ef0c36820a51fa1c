/**
 * A real `tandem serve --json` process for end-to-end tests (restarts, the supervisor, GPU faults), and
 * a small HTTP client for its API. One copy, so that every such test waits for lines, reports a dead or
 * silent server and cleans up the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');

/** One --json line: printed when a server is serving (under a supervisor, once per launched server). */
export interface ServeLine {
  url: string;
  pid: number;
  restarts: number;
  /** The admin key, on the first start of a fresh data dir only. */
  adminKey: string | null;
}

export interface ServeProcess {
  /** The spawned process: the supervisor, or the server itself with --no-supervise. */
  readonly proc: ChildProcess;
  /**
   * The next --json line, in order (the first server's, then each relaunched server's); rejects with
   * stderr when the process exits first or no line comes within `timeoutMs`.
   */
  next(timeoutMs?: number): Promise<ServeLine>;
  /** All of stderr so far. */
  stderr(): string;
  /** Resolves with the exit code (null when ended by a signal). */
  readonly exited: Promise<number | null>;
  /** Sends `signal` (SIGKILL by default: for `finally`, where the process may already be gone). */
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Resolves once process `pid` no longer exists (10 s at most): the server a killed supervisor ran
 * notices within milliseconds (longer on a loaded box) and may still claim or finish a job, or write a
 * trace into the data directory, meanwhile.
 */
export async function serverGone(pid: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return; // ESRCH: gone
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Spawns `serve --port 0 --data-dir <dataDir> <args> --json`. The log is silent unless `env` sets
 * TANDEM_LOG: stderr then holds only what the supervisor and the CLI print, which tests match on.
 */
export function startServe(dataDir: string, args: string[], env: Record<string, string> = {}): ServeProcess {
  const proc = spawn(
    process.execPath,
    [MAIN, 'serve', '--port', '0', '--data-dir', dataDir, ...args, '--json'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TANDEM_LOG: 'silent', ...env } },
  );
  let err = '';
  proc.stderr!.on('data', (b: Buffer) => (err += b.toString()));

  // Lines not asked for yet wait in `queue`; callers of next() waiting for a line wait in `waiters`.
  // A waiter gets null when the process exits: no further line will come.
  const queue: string[] = [];
  const waiters: ((l: string | null) => void)[] = [];
  createInterface({ input: proc.stdout! }).on('line', (l) =>
    waiters.length ? waiters.shift()!(l) : queue.push(l),
  );
  let exitedAs: string | null = null;
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code, signal) => {
      exitedAs = `exited with ${code ?? signal}`;
      for (const w of waiters.splice(0)) w(null);
      resolve(code);
    }),
  );

  const next = (timeoutMs = 20_000): Promise<ServeLine> =>
    new Promise<ServeLine>((resolve, reject) => {
      const take = (l: string | null): void => {
        clearTimeout(timer);
        if (l === null) return reject(new Error(`serve ${exitedAs ?? 'ended'} before a line: ${err}`));
        // Parsed here, not in the 'line' handler, so that a stray line fails this test, not the process.
        try {
          resolve(JSON.parse(l) as ServeLine);
        } catch (e) {
          reject(new Error(`serve printed a line that is not JSON: ${l}\n${String(e)}\nstderr: ${err}`));
        }
      };
      const timer = setTimeout(() => {
        const i = waiters.indexOf(take);
        if (i >= 0) waiters.splice(i, 1); // a line that comes later stays queued for the next call
        reject(new Error(`no serve line in ${timeoutMs} ms: ${err}`));
      }, timeoutMs);
      if (queue.length) take(queue.shift()!);
      else if (exitedAs) take(null);
      else waiters.push(take);
    });

  return { proc, next, exited, stderr: () => err, kill: (signal = 'SIGKILL') => void proc.kill(signal) };
}

export interface ApiClientOptions {
  /**
   * How many times to retry a request that fails without an answer (200 ms apart): for a server that is
   * away for a moment while its supervisor relaunches it. 0 by default: a refused connection fails.
   */
  retryConnectionErrors?: number;
}

export type ApiCall = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** `call(method, path, body?)`: a JSON request with the bearer `key`; the answer's JSON, whatever its status. */
export function apiClient(url: string, key: string, options: ApiClientOptions = {}): ApiCall {
  const retries = options.retryConnectionErrors ?? 0;
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    for (let i = 0; ; i++) {
      try {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${key}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        // Inside the try: a server killed mid-answer breaks the body, not the fetch.
        return (await res.json()) as T;
      } catch (e) {
        if (i >= retries) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };
}
