/**
 * Progress bars for long local runs (`run md`, `run option`, `run var`, `bench`), drawn with cli-progress
 * on stderr. Only for a person watching: no bar when stdout or stderr is not a terminal (a pipe, a
 * file, a test) or with --json, so captured output stays exactly the result. cli-progress redraws from
 * a timer: `stop()` must run on every path, which `withProgress` guarantees.
 */
import cliProgress from 'cli-progress';
import type { Observer } from '../obs/observer.js';

export interface Progress {
  /** fraction in [0, 1]; a smaller value than the last one is ignored (bars only go forward). */
  update(fraction: number, label?: string): void;
  stop(): void;
}

/** What a long-running function is handed to report how far it is (the bench programs take one). */
export type ReportProgress = (fraction: number, label: string) => void;

const NONE: Progress = { update: () => undefined, stop: () => undefined };

interface TtyLike extends NodeJS.WritableStream {
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  readonly json: boolean;
  /** Where the bar goes (stderr); a test passes its own. */
  readonly stream?: TtyLike;
  /** Whether stdout is a terminal (the results go there); a test passes its own. */
  readonly stdoutIsTTY?: boolean;
}

/** Whether a bar would be shown: both streams are terminals and the output is not JSON. */
export function progressWanted(o: ProgressOptions): boolean {
  const stream = o.stream ?? process.stderr;
  return !o.json && (o.stdoutIsTTY ?? process.stdout.isTTY === true) && stream.isTTY === true;
}

export function createProgress(title: string, o: ProgressOptions): Progress {
  if (!progressWanted(o)) return NONE;
  const bar = new cliProgress.SingleBar(
    {
      stream: o.stream ?? process.stderr,
      format: `${title} [{bar}] {percentage}% | {duration_formatted} | {label}`,
      // A Ctrl-C mid-run ends the process without a stop (no SIGINT listener of ours, by design), so
      // change no terminal mode that would stay changed: cursor visible, line wrapping on (the bar
      // line is cut to the terminal's width instead).
      hideCursor: false,
      linewrap: true,
      clearOnComplete: true,
      barsize: 30,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(1000, 0, { label: '' });
  let last = 0;
  let stopped = false;
  return {
    update(fraction, label) {
      const value = Math.round(Math.min(1, Math.max(0, fraction)) * 1000);
      if (stopped || value < last) return;
      last = value;
      bar.update(value, { label: label ?? '' });
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}

/**
 * The bar as a `ReportProgress` for code that prints its own result when done (the bench programs):
 * reaching 1 takes the bar away first, so the result is not drawn over.
 */
export function reportTo(p: Progress): ReportProgress {
  return (fraction, label) => {
    p.update(fraction, label);
    if (fraction >= 1) p.stop();
  };
}

/** Runs `fn` with a bar that is stopped however `fn` ends. */
export async function withProgress<T>(
  title: string,
  o: ProgressOptions,
  fn: (p: Progress) => Promise<T>,
): Promise<T> {
  const p = createProgress(title, o);
  try {
    return await fn(p);
  } finally {
    p.stop();
  }
}

/**
 * Progress of a run whose tasks are submitted ahead of their completion (the Monte Carlo workloads):
 * finished tasks over finished + still pending, as the runtime counts them. An estimate: a run that
 * submits a window at a time has fewer pending than it will run.
 */
export function taskProgress(pending: () => number, p: Progress): Observer {
  let ended = 0;
  return {
    onTaskEnd: () => {
      ended++;
      p.update(ended / (ended + pending()), `${ended} tasks done`);
    },
  };
}

/**
 * A workload's progress: its own count (done of total steps or tasks) once it reports one through the
 * `onProgress` run option, the runtime's task estimate (taskProgress) until then, or for a workload
 * that reports none.
 */
export function workloadProgress(
  pending: () => number,
  p: Progress,
): {
  readonly observer: Observer;
  readonly onProgress: (done: number, total: number, unit: string) => void;
} {
  let reported = false;
  const estimate = taskProgress(pending, p);
  return {
    observer: { onTaskEnd: (e) => (reported ? undefined : estimate.onTaskEnd?.(e)) },
    onProgress: (done, total, unit) => {
      reported = true;
      if (total > 0) p.update(done / total, `${done}/${total} ${unit}s`);
    },
  };
}
