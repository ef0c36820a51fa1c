/**
 * `tandem serve` runs under this supervisor: the CLI process forks the real server as a child (same
 * arguments; CHILD_ENV marks it) and relaunches it when it asks to be (RESTART_EXIT_CODE, after a device
 * was lost for the rest of the process: a sticky CUDA fault is only cleared by a new process) or dies
 * unexpectedly (a crash, kill -9 of the child). Why a process and not a reset in place: NVIDIA documents
 * that after a sticky error "any further CUDA work will return the same error ... the process must be
 * terminated and relaunched".
 *
 * - stdout is the child's own (inherited): the first line is the first child's; a relaunched child prints
 *   its lines again, with the same URL (the port the first child bound is pinned for the relaunches).
 * - SIGINT/SIGTERM are forwarded (over the IPC channel, so a terminal's Ctrl-C, which reaches both
 *   processes, stops the child once); a second signal kills the child. The supervisor exits with the
 *   child's code after a stop.
 * - The child dies with its supervisor: it watches the IPC channel and kills itself when the channel
 *   closes, so kill -9 of `tandem serve` still stops the whole service at once.
 * - Crash loops stop: more than TANDEM_RESTART_LIMIT (default 5) unexpected exits within a minute end the
 *   supervisor with a message; relaunches back off (0, 0.5, 1, 2, 4 ... 30 s) while they come quickly.
 *   Restarts the child asked for do not count toward that limit (it asks only after committing the
 *   faulted jobs' failures, so each relaunch makes progress) but do back off.
 *
 * This module loads only Node's own modules: the supervisor starts in tens of milliseconds and leaves
 * the service's start-up time to the child.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The child's "relaunch me" exit code (EX_TEMPFAIL). */
export const RESTART_EXIT_CODE = 75;
/** Set to '1' in the server process's environment by its supervisor. */
export const CHILD_ENV = 'TANDEM_SUPERVISED_CHILD';
/** How many relaunches came before this child (0 for the first), for its --json line. */
export const RESTARTS_ENV = 'TANDEM_RESTARTS';

/** Messages over the IPC channel, child → supervisor. */
export type ChildMessage =
  | { readonly type: 'tandem:ready'; readonly port: number }
  | {
      readonly type: 'tandem:restart';
      readonly reason: string;
      /**
       * A GPU kernel of the child never ended: its exit would wait on the driver's teardown of that
       * device (measured: indefinitely, spinning), so the supervisor ends it at once with SIGKILL
       * instead of after RESTART_EXIT_GRACE_MS.
       */
      readonly hungKernel?: boolean;
    };
/** Supervisor → child. */
export interface StopMessage {
  readonly type: 'tandem:stop';
  readonly signal: string;
}

const WINDOW_MS = 60_000;
/**
 * A child that asked for a relaunch but has not exited this long after is killed (SIGKILL): a safety net
 * for an exit that never comes. A child that says a GPU kernel hung (its exit waits on the driver, and
 * only the end of the process stops the kernel) is killed at once instead (relaunchExitGraceMs).
 */
export const RESTART_EXIT_GRACE_MS = 15_000;
const MAX_BACKOFF_MS = 30_000;

/** Whether `tandem serve <argv>` should run supervised (not in the child, not opted out, not --queue). */
export function shouldSupervise(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  if (env[CHILD_ENV] === '1') return false;
  if (argv.includes('--no-supervise') || env['TANDEM_SUPERVISE'] === '0') return false;
  // The scaled-out control plane (--queue) owns no device: nothing to relaunch it for.
  return !argv.includes('--queue');
}

/** The child side: is this process a server under a supervisor (with the channel to talk to it)? */
export function supervisedChild(): boolean {
  return process.env[CHILD_ENV] === '1' && typeof process.send === 'function';
}

function isChildMessage(m: unknown): m is ChildMessage {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string';
}

/** `--port X` / `--port=X` replaced by the port the first child bound, so a relaunch keeps the URL. */
export function pinPort(argv: readonly string[], port: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--port') i++;
    else if (!a.startsWith('--port=')) out.push(a);
  }
  return [...out, '--port', String(port)];
}

/** The part of a child process the relaunch kill needs. */
export interface KillableChild {
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  kill(signal: NodeJS.Signals): boolean;
}

/**
 * After a child asked for a relaunch: kill it (SIGKILL) if it has not exited `graceMs` later, and call
 * `killed`. Returns a function that disarms the timer (call it when the child exits).
 */
export function killIfNotExited(c: KillableChild, graceMs: number, killed: () => void): () => void {
  const timer = setTimeout(() => {
    if (c.exitCode !== null || c.signalCode !== null) return;
    killed();
    c.kill('SIGKILL');
  }, graceMs);
  return () => clearTimeout(timer);
}

/** How long a child that asked for a relaunch may take to exit before it is killed. */
export function relaunchExitGraceMs(m: Extract<ChildMessage, { type: 'tandem:restart' }>): number {
  return m.hungKernel === true ? 0 : RESTART_EXIT_GRACE_MS;
}

function say(msg: string): void {
  process.stderr.write(`tandem supervisor: ${msg}\n`);
}

interface ChildRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The child reported it was serving. */
  readonly ready: boolean;
  /** Why the child asked to be relaunched, when it did. */
  readonly reason: string | null;
  /** It asked for a relaunch and was killed for not exiting within RESTART_EXIT_GRACE_MS. */
  readonly killedAfterAsking: boolean;
  readonly startedAt: number;
}

/** Runs `tandem serve <argv>` as supervised children until one stops for good; returns the exit code. */
export async function supervise(argv: readonly string[]): Promise<number> {
  const limit = Math.max(0, Number(process.env['TANDEM_RESTART_LIMIT'] ?? 5) || 0);
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  let child: ChildProcess | null = null;
  let stopSignal: NodeJS.Signals | null = null;
  let wakeBackoff: (() => void) | null = null;
  let port: number | null = null;
  const crashes: number[] = [];
  const restarts: number[] = [];

  const onSignal = (sig: NodeJS.Signals): void => {
    if (stopSignal) {
      // A second signal: do not wait for a graceful stop any more.
      child?.kill('SIGKILL');
      return;
    }
    stopSignal = sig;
    wakeBackoff?.();
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const msg: StopMessage = { type: 'tandem:stop', signal: sig };
    if (child.connected) child.send(msg, (e) => e && child?.kill(sig));
    else child.kill(sig);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const runChild = (generation: number): Promise<ChildRun> => {
    const startedAt = Date.now();
    const args = port === null ? [...argv] : pinPort(argv, port);
    const c = fork(main, ['serve', ...args], {
      env: { ...process.env, [CHILD_ENV]: '1', [RESTARTS_ENV]: String(generation) },
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      execArgv: serverExecArgv(process.execArgv),
    });
    child = c;
    let ready = false;
    let reason: string | null = null;
    let killedAfterAsking = false;
    let disarm: (() => void) | null = null;
    c.on('message', (m: unknown) => {
      if (!isChildMessage(m)) return;
      if (m.type === 'tandem:ready') {
        ready = true;
        port = m.port;
      } else if (m.type === 'tandem:restart') {
        reason = m.reason;
        disarm ??= killIfNotExited(c, relaunchExitGraceMs(m), () => {
          say(
            m.hungKernel === true
              ? 'the server asked for a relaunch with a GPU kernel hung (its exit would wait on the device); killing it'
              : `the server asked for a relaunch but did not exit within ${RESTART_EXIT_GRACE_MS} ms; killing it`,
          );
          killedAfterAsking = true;
        });
      }
    });
    return new Promise((resolve) => {
      c.once('error', (e) => say(`the server process: ${e.message}`));
      // Decided once the exit is known and the channel has closed: messages still buffered in it
      // ("ready", the reason for a relaunch) arrive before its close, but may come after the exit.
      let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
      let channelOpen = true;
      const done = (): void => {
        if (exit && !channelOpen) {
          disarm?.();
          resolve({ ...exit, ready, reason, startedAt, killedAfterAsking });
        }
      };
      c.once('disconnect', () => {
        channelOpen = false;
        done();
      });
      c.once('exit', (code, signal) => {
        child = null;
        exit = { code, signal };
        done();
        // Never wait long for a channel that does not report its close.
        const timer = setTimeout(() => {
          channelOpen = false;
          done();
        }, 1000);
        c.once('disconnect', () => clearTimeout(timer));
        if (!channelOpen) clearTimeout(timer);
      });
    });
  };

  try {
    for (let generation = 0; ; generation++) {
      const run = await runChild(generation);
      const code = run.code ?? 128 + (run.signal ? (constants.signals[run.signal] ?? 0) : 0);
      if (stopSignal) return code;
      const asked = run.code === RESTART_EXIT_CODE || run.killedAfterAsking;
      if (run.code === 0) return 0; // it stopped by itself, normally
      const why = asked
        ? `the server asked for a relaunch (${run.reason ?? 'no reason given'})`
        : run.signal
          ? `the server was killed by ${run.signal}`
          : `the server exited with code ${code}`;
      // Never came up (bad arguments, the port taken ...): nothing a relaunch would fix.
      if (!run.ready && generation === 0) {
        say(`${why} before it was serving; not relaunching`);
        return code;
      }
      const now = Date.now();
      const recent = (list: number[]): number => {
        while (list.length > 0 && now - list[0]! > WINDOW_MS) list.shift();
        return list.length;
      };
      if (!asked && recent(crashes) >= limit) {
        say(
          `${why}; it ended unexpectedly ${crashes.length + 1} times within ${WINDOW_MS / 1000} s, giving up (TANDEM_RESTART_LIMIT=${limit})`,
        );
        return code === RESTART_EXIT_CODE || code === 0 ? 1 : code;
      }
      if (!asked) crashes.push(now);
      const n = recent(restarts);
      restarts.push(now);
      const delay = n === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 250 * 2 ** n);
      say(`${why}; relaunching${delay ? ` in ${delay} ms` : ''}${port !== null ? ` on port ${port}` : ''}`);
      if (delay > 0)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          wakeBackoff = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      wakeBackoff = null;
      if (stopSignal) return 0;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

const DEFAULT_SEMI_SPACE_MB = '16';

/**
 * Node flags for the server process. A latency-bound service wants few young-generation collections:
 * V8 starts with a ~1 MiB semi-space, so a server allocating ~20-30 KiB per job stopped every few dozen
 * jobs for a scavenge (0.4-1.2 ms on the H200 host, the whole p99 of a 0.1 ms GPU price). A 16 MiB
 * young generation from the start makes them rare (one per ~700 such jobs). 64 MiB was tried: the gemm
 * job's scavenges then held the loop up to ~100 ms (healthz p99 9-78 ms vs 7-11 ms at 16 MiB on the dev
 * VM, bench/RESULTS.md). Flags given explicitly (NODE_OPTIONS or the CLI's own execArgv) win.
 * TANDEM_SEMI_SPACE_MB=0 leaves V8's default; a value that is not a whole number of MiB is reported
 * through `warn` and the default (16) is used.
 */
export function serverExecArgv(
  own: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (m) => process.stderr.write(`tandem: ${m}\n`),
): string[] {
  const given = [...own, ...(env['NODE_OPTIONS'] ?? '').split(/\s+/)];
  const has = (flag: string): boolean => given.some((a) => a.startsWith(flag));
  let young = env['TANDEM_SEMI_SPACE_MB'] ?? DEFAULT_SEMI_SPACE_MB;
  if (!/^[0-9]{1,4}$/.test(young)) {
    warn(
      `TANDEM_SEMI_SPACE_MB=${JSON.stringify(young)} is not a whole number of MiB (0-9999); using ${DEFAULT_SEMI_SPACE_MB}`,
    );
    young = DEFAULT_SEMI_SPACE_MB;
  }
  const extra =
    Number(young) > 0 && !has('--max-semi-space-size') && !has('--min-semi-space-size')
      ? [`--max-semi-space-size=${Number(young)}`, `--min-semi-space-size=${Number(young)}`]
      : [];
  return [...own, ...extra];
}
