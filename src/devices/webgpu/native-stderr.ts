/**
 * Dawn's own warnings ("Couldn't load Vulkan", "maxDynamic… artificially reduced …") are written by its
 * native code straight to file descriptor 2 with fprintf, not through JavaScript, and Dawn offers no
 * instance-level log callback to take them. So, while the backend discovers adapters and opens its
 * device, fd 2 points at a temporary file (dup/dup2 from libc through koffi); afterwards it is put back
 * and the captured lines go to the debug log (`TANDEM_LOG=debug` shows them). A line this process's
 * JavaScript wrote meanwhile (`[tandem…]`, `tandem: …`) is written back to stderr, so it is not lost.
 *
 * Where libc cannot be loaded (Windows), the work runs without capture.
 */
import koffi from 'koffi';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Libc {
  readonly dup: (fd: number) => number;
  readonly dup2: (from: number, to: number) => number;
  readonly close: (fd: number) => number;
}

let libc: Libc | null | undefined;

function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  try {
    const name =
      process.platform === 'darwin' ? 'libc.dylib' : process.platform === 'linux' ? 'libc.so.6' : null;
    if (!name) return (libc = null);
    const lib = koffi.load(name);
    libc = {
      dup: lib.func('int dup(int)') as Libc['dup'],
      dup2: lib.func('int dup2(int, int)') as Libc['dup2'],
      close: lib.func('int close(int)') as Libc['close'],
    };
  } catch {
    libc = null;
  }
  return libc;
}

const OURS = /^(\[tandem|tandem: )/;

/** Captures run one at a time: two overlapping ones would restore fd 2 in the wrong order. */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs `work` with native writes to stderr captured; each captured line goes to `debug` (blank ones
 * dropped), except lines of our own, which go back to stderr. Overlapping calls wait for each other.
 */
export function withNativeStderr<T>(debug: (line: string) => void, work: () => Promise<T>): Promise<T> {
  const run = queue.then(() => captured(debug, work));
  queue = run.catch(() => undefined);
  return run;
}

async function captured<T>(debug: (line: string) => void, work: () => Promise<T>): Promise<T> {
  const c = loadLibc();
  if (!c) return work();
  const dir = mkdtempSync(join(tmpdir(), 'tandem-dawn-'));
  const file = join(dir, 'stderr.txt');
  const fd = openSync(file, 'w+');
  const saved = c.dup(2);
  if (saved < 0 || c.dup2(fd, 2) < 0) {
    if (saved >= 0) c.close(saved);
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
    return work();
  }
  try {
    return await work();
  } finally {
    c.dup2(saved, 2);
    c.close(saved);
    closeSync(fd);
    const text = readFileSync(file, 'utf8');
    rmSync(dir, { recursive: true, force: true });
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      if (OURS.test(line)) process.stderr.write(`${line}\n`);
      else debug(`dawn: ${line}`);
    }
  }
}
