/**
 * Shared CLI plumbing: JSON/table output, output files under .tandem/, and error reporting with stable
 * codes. `parse`/`intOption` are the argument parsing of the standalone bench scripts (`node
 * dist/bench/x.js`); the `tandem` command itself parses with commander (program.ts).
 */
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { TandemError, isTandemError } from '../core/errors.js';

export type Options = NonNullable<ParseArgsConfig['options']>;

export function parse(
  argv: string[],
  options: Options,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const r = parseArgs({
      args: argv,
      options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, ...options },
      allowPositionals: true,
      strict: true,
    });
    return {
      values: r.values as Record<string, string | boolean | string[] | undefined>,
      positionals: r.positionals,
    };
  } catch (e) {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', (e as Error).message);
  }
}

export function intOption(v: unknown, name: string, def: number, min = 1, max = 1 << 20): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new TandemError(
      'TANDEM_ERR_SIZE',
      `--${name} must be an integer in [${min}, ${max}], got ${String(v)}`,
    );
  }
  return n;
}

export function print(json: boolean, data: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${human()}\n`);
}

export function table(rows: ReadonlyArray<ReadonlyArray<string>>): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function reportError(e: unknown, json: boolean): number {
  const err = isTandemError(e)
    ? e
    : new TandemError('TANDEM_ERR_INTERNAL', e instanceof Error ? e.message : String(e));
  if (json) process.stdout.write(`${JSON.stringify({ error: err.toJSON() })}\n`);
  else process.stderr.write(`tandem: ${err.message}\n`);
  return err.code === 'TANDEM_ERR_INTERNAL' ? 70 : 2;
}

export function flops(rate: number): string {
  if (rate >= 1e12) return `${(rate / 1e12).toFixed(2)} TFLOP/s`;
  return `${(rate / 1e9).toFixed(1)} GFLOP/s`;
}

/** Where files the CLI writes go when no path is given: .tandem/ of the working directory. */
export const OUTPUT_DIR = '.tandem';

/**
 * The absolute path of an output file: `given` as the user wrote it, or `.tandem/traces/<name>`; its
 * folder is created. A folder that cannot be made is a clear error before anything runs.
 */
export function outputFile(given: string | undefined, name: string, cwd = process.cwd()): string {
  const file = given !== undefined ? resolve(cwd, given) : join(resolve(cwd, OUTPUT_DIR), 'traces', name);
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch (e) {
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `cannot write ${file}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  return file;
}
