/**
 * `tandem <command>`: a client of the runtime (devices, run, bench) or of the service (serve, submit,
 * jobs ...). The command tree is in program.ts; this file runs it and turns every failure into one
 * message with a stable code (JSON under --json) and a non-zero exit.
 */
import { CommanderError, type Command } from 'commander';
import { TandemError } from '../core/errors.js';
import { reportError } from './output.js';
import { buildProgram } from './program.js';

/** Commander's "help was shown" outcomes: not errors (exit 0, or 1 for a group named without a command). */
const HELP_CODES = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version']);

/**
 * After an error the process must end even if something the failed command opened still holds the
 * event loop (a worker thread, a socket): the message is out, nothing is left to do. The known causes
 * are fixed where they are (a runtime that fails to open closes what it opened); this only bounds
 * what a future one could cost.
 */
const EXIT_AFTER_ERROR_MS = 1000;

async function main(argv: string[]): Promise<number> {
  let code = 0;
  const program = buildProgram((c) => {
    code = c;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    if (HELP_CODES.has(e.code)) return e.exitCode;
    // A usage error: unknown command/flag (with commander's "Did you mean"), a bad or missing value.
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `${e.message.replace(/^error: /, '')}\n(\`tandem ${commandPath(program, argv)}--help\` shows the usage)`,
      { usage: e.code },
    );
  }
}

/** The (sub)commands the user named, for the hint (`run gemm `). */
function commandPath(program: Command, argv: readonly string[]): string {
  let at = program;
  let path = '';
  for (const word of argv) {
    const sub = at.commands.find((c) => c.name() === word);
    if (!sub) break;
    at = sub;
    path += `${word} `;
  }
  return path;
}

/**
 * The reader of our output went away (`tandem infer ... | head`): what is left to print has nowhere to
 * go, which is the reader's choice, not a failure — end quietly as other command-line tools do, instead
 * of an unhandled 'error' event's stack trace.
 */
function endQuietlyOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    process.exit(process.exitCode ?? 0);
  });
}
endQuietlyOnClosedPipe(process.stdout);
endQuietlyOnClosedPipe(process.stderr);

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    const code = reportError(e, argv.includes('--json'));
    process.exitCode = code;
    setTimeout(() => process.exit(code), EXIT_AFTER_ERROR_MS).unref();
  },
);
