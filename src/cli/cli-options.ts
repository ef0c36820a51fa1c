/**
 * Option value parsers for the commander program: integers in a range and closed sets of values
 * (device kinds, dtypes, roles ...) that answer a typo with the closest known value, the way commander
 * already does for command and flag names. They run while the arguments are parsed, before any
 * device opens, so a bad value costs nothing.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DTYPES } from '../core/dtype.js';
import { HARDWARE_KINDS } from '../devices/device.js';

/** Damerau-Levenshtein distance (adjacent swaps count one), as commander's own suggestions use. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known values closest to `value`: within about a third of its length (at least 1), the nearest
 * first; a value that is a prefix of a known one counts as close (`web` → webgpu).
 */
export function closest(value: string, known: readonly string[]): string[] {
  const v = value.toLowerCase();
  const scored = known
    .map((k) => ({ k, d: k.startsWith(v) && v.length > 0 ? 0.5 : editDistance(v, k.toLowerCase()) }))
    .filter(({ d }) => d <= Math.max(1, Math.floor(v.length / 3)) + 0.5)
    .sort((x, y) => x.d - y.d);
  if (scored.length === 0) return [];
  return scored.filter(({ d }) => d === scored[0]!.d).map(({ k }) => k);
}

/** "did you mean cpu?" (or nothing) followed by the full list. */
export function suggestion(value: string, known: readonly string[]): string {
  const near = closest(value, known);
  const mean = near.length > 0 ? ` (did you mean ${near.join(' or ')}?)` : '';
  return `${mean}; one of: ${known.join(', ')}`;
}

/** A parser that accepts only `known` values and suggests the closest one otherwise. */
export function oneOfParser<T extends string>(known: readonly T[]): (value: string) => T {
  return (value) => {
    if ((known as readonly string[]).includes(value)) return value as T;
    throw new InvalidArgumentError(`${JSON.stringify(value)} is not known${suggestion(value, known)}.`);
  };
}

/** Device kinds a user can ask for on the command line (`auto` lets the scheduler choose): the one list. */
export const DEVICE_KINDS = HARDWARE_KINDS;

/**
 * `--device`: a kind (cpu, cuda, webgpu) or a device id (cuda0, webgpu1); with `auto` when the command
 * lets the scheduler choose.
 */
export function deviceParser(withAuto: boolean): (value: string) => string {
  const kinds: string[] = withAuto ? ['auto', ...DEVICE_KINDS] : [...DEVICE_KINDS];
  return (value) => {
    const kind = value.replace(/\d+$/, '');
    if (kinds.includes(value) || (kind !== value && (DEVICE_KINDS as readonly string[]).includes(kind)))
      return value;
    throw new InvalidArgumentError(
      `device ${JSON.stringify(value)} is not known${suggestion(kind, kinds)} (or a device id such as cuda0).`,
    );
  };
}

export const dtypeParser = oneOfParser(DTYPES);

/** `--backends cpu,cuda`: each item checked (plus `none` where the command runs without devices). */
export function backendsParser(withNone: boolean): (value: string) => string {
  const known: string[] = withNone ? [...DEVICE_KINDS, 'none'] : [...DEVICE_KINDS];
  return (value) => {
    const items = value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (items.length === 0) throw new InvalidArgumentError(`expected a list such as cpu,cuda.`);
    for (const item of items)
      if (!known.includes(item))
        throw new InvalidArgumentError(
          `backend ${JSON.stringify(item)} is not known${suggestion(item, known)}.`,
        );
    return items.join(',');
  };
}

/** An integer in [min, max] (the same bounds the commands checked before the CLI was on commander). */
export function intParser(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}.`);
    return n;
  };
}

/** A finite number. */
export function numberParser(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n))
    throw new InvalidArgumentError(`must be a number, got ${JSON.stringify(value)}.`);
  return n;
}

/** `--flag`, `--flag true|false|yes|no|1|0`. */
export function booleanParser(value: string): boolean {
  const v = value.toLowerCase();
  if (['true', 'yes', '1'].includes(v)) return true;
  if (['false', 'no', '0'].includes(v)) return false;
  throw new InvalidArgumentError(`must be true or false, got ${JSON.stringify(value)}.`);
}

/** The `--json` flag every command takes. */
export function jsonOption(
  what = 'machine-readable output (one JSON document on stdout; errors too)',
): Option {
  return new Option('--json', what);
}

/** How an action hands back its exit code (commander's actions return nothing useful). */
export type SetExitCode = (code: number) => void;

/**
 * The argv of the options the user gave (not defaults), rebuilt from what commander parsed: for the
 * bench programs, which are also standalone scripts with their own parsing, and for the serve
 * supervisor, which relaunches the server with the same arguments.
 */
export function givenArgv(cmd: Command): string[] {
  const out: string[] = [];
  for (const o of cmd.options) {
    const name = o.attributeName();
    if (cmd.getOptionValueSource(name) !== 'cli') continue;
    const v: unknown = cmd.getOptionValue(name);
    const long = o.long!;
    if (o.negate) {
      if (v === false) out.push(long);
    } else if (v === true) out.push(long);
    else if (Array.isArray(v)) for (const item of v) out.push(long, String(item));
    else if (v !== undefined && v !== false) out.push(long, String(v));
  }
  return out;
}

/** "Environment:" help text listing the variables a command reads, with what each does. */
export function envHelp(vars: ReadonlyArray<readonly [name: string, what: string]>): string {
  if (vars.length === 0) return '';
  const width = Math.max(...vars.map(([n]) => n.length));
  return `\nEnvironment:\n${vars.map(([n, w]) => `  ${n.padEnd(width)}  ${w}`).join('\n')}\n`;
}

/** Variables every command that opens a local runtime reads. */
export const RUNTIME_ENV: ReadonlyArray<readonly [string, string]> = [
  ['TANDEM_LOG', 'log level (debug shows backend and driver messages)'],
  ['TANDEM_CUDA_SPIN_US', 'CUDA completion spin budget in µs (default 30, 0 off)'],
  [
    'TANDEM_CUDA_OWN_EVENTS',
    'CUDA operations get their own completion event below this many outstanding (default 32; 0: one per JS turn)',
  ],
  ['TANDEM_MALLOC_TUNING', '0 leaves glibc malloc as it is (large host buffers)'],
  [
    'TANDEM_LT_AUTOTUNE',
    '0: large cuBLASLt matmuls keep the heuristic algorithm instead of the fastest timed',
  ],
  [
    'TANDEM_GEMM_VIA_LT',
    '0: large f16/bf16 gemms stay on cublasGemmEx instead of being tuned against cuBLASLt (A/B runs; also TANDEM_LT_CONFIRM=0)',
  ],
  ['TANDEM_ATTN_MMA', 'v0..v5: CUDA attention kernels (default v5 from sm_80 on, v0 before)'],
  [
    'TANDEM_ATTN_FAST',
    '0: the CUDA attention backward without its fast exp/mask path (A/B runs; also TANDEM_ATTN_GRID=2d, TANDEM_ATTN_DQ_BLOCKS, TANDEM_ATTN_DKDV_BLOCKS)',
  ],
];

/** Variables every client of a running service reads. */
export const CLIENT_ENV: ReadonlyArray<readonly [string, string]> = [
  ['TANDEM_URL', 'service URL (default http://127.0.0.1:8080); --url wins'],
  ['TANDEM_KEY', 'API key (printed by the first `tandem serve`); --key wins'],
];
