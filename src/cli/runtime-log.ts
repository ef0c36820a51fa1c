/**
 * How CLI commands that open devices talk on stderr: TANDEM_LOG (silent|error|warn|info|debug, default
 * warn) decides. Backends' warnings print from `warn`; drivers' and Dawn's start-up chatter only at
 * `debug`; and once the runtime is open, one summary line per backend (devices or why unavailable) —
 * except where the command's own output already is that summary (`tandem devices`).
 */
import type { Runtime } from '../runtime/runtime.js';
import { describeBackend } from '../runtime/backends.js';

export type LogLevel = 'silent' | 'error' | 'warn' | 'info' | 'debug';
const LEVELS: readonly LogLevel[] = ['silent', 'error', 'warn', 'info', 'debug'];

export function logLevelFrom(env: NodeJS.ProcessEnv): LogLevel {
  const v = env['TANDEM_LOG'];
  return LEVELS.includes(v as LogLevel) ? (v as LogLevel) : 'warn';
}

export interface RuntimeLoggers {
  readonly log: (msg: string) => void;
  readonly debug: (msg: string) => void;
}

export function runtimeLoggers(
  level: LogLevel,
  write = (s: string) => process.stderr.write(s),
): RuntimeLoggers {
  const at = LEVELS.indexOf(level);
  return {
    log: (m) => {
      if (at >= LEVELS.indexOf('warn')) write(`[tandem] ${m}\n`);
    },
    debug: (m) => {
      if (at >= LEVELS.indexOf('debug')) write(`[tandem debug] ${m}\n`);
    },
  };
}

/** The one line per backend, through `log` (so TANDEM_LOG=error or silent hides them too). */
export function printBackendSummary(rt: Pick<Runtime, 'backends'>, log: (msg: string) => void): void {
  for (const b of rt.backends) log(describeBackend(b));
}
