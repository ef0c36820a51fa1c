/**
 * Per-job timelines. While a job runs, runtime events tagged with its id are collected here (converted
 * to epoch microseconds so that a trace outlives the process clock); at the end the job's trace is
 * written next to the database. A trace is Chrome Trace Event JSON built with the runtime's
 * TraceRecorder: job-level spans (queued, placement, run, commit) on a "job" track above the
 * runtime's per-queue and per-copy-engine tracks.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Observer, TaskEvent, TransferEvent } from '../../obs/observer.js';
import { TraceRecorder, type ChromeTrace } from '../../obs/trace.js';
import { BackgroundFileWriter } from './file-writer.js';
import type { JobRecord } from '../store/job-store.js';

/** performance.now()-based µs → epoch µs. */
const EPOCH_OFFSET_US = performance.timeOrigin * 1000;
const MAX_EVENTS_PER_JOB = 200_000;

export interface JobSpan {
  readonly name: string;
  readonly startUs: number;
  readonly endUs: number;
  readonly args?: Record<string, unknown>;
}

export interface JobEvents {
  readonly tasks: TaskEvent[];
  readonly transfers: TransferEvent[];
  readonly spans: JobSpan[];
  dropped: number;
}

export class JobTraceCollector implements Observer {
  private readonly live = new Map<string, JobEvents>();
  /** Traces being written, by file name (served from here until the file is in place). */
  private readonly writing = new Map<string, string>();
  private readonly flushing = new Set<Promise<void>>();
  private readonly writer = new BackgroundFileWriter();
  /** Where a failed background write is reported (the service logs it). */
  onWriteError: (jobId: string, e: unknown) => void = () => undefined;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  begin(jobId: string): JobEvents {
    const ev: JobEvents = { tasks: [], transfers: [], spans: [], dropped: 0 };
    this.live.set(jobId, ev);
    return ev;
  }

  events(jobId: string): JobEvents | undefined {
    return this.live.get(jobId);
  }

  end(jobId: string): void {
    this.live.delete(jobId);
  }

  private bucket(tags: Readonly<Record<string, string>> | undefined): JobEvents | undefined {
    const id = tags?.['job'];
    if (id === undefined) return undefined;
    const b = this.live.get(id);
    if (b && b.tasks.length + b.transfers.length >= MAX_EVENTS_PER_JOB) {
      b.dropped++;
      return undefined;
    }
    return b;
  }

  onTaskEnd(e: TaskEvent): void {
    this.bucket(e.tags)?.tasks.push({
      ...e,
      submitUs: e.submitUs + EPOCH_OFFSET_US,
      readyUs: e.readyUs + EPOCH_OFFSET_US,
      startUs: e.startUs + EPOCH_OFFSET_US,
      endUs: e.endUs + EPOCH_OFFSET_US,
    });
  }

  onTransfer(e: TransferEvent): void {
    this.bucket(e.tags)?.transfers.push({
      ...e,
      startUs: e.startUs + EPOCH_OFFSET_US,
      endUs: e.endUs + EPOCH_OFFSET_US,
    });
  }

  pathFor(jobId: string): string {
    return join(this.dir, `${jobId}.json`);
  }

  /**
   * Writes the trace atomically (tmp + rename) on a writer thread and returns the file name relative to
   * the dir. A synchronous write cost ~0.6 ms on every job's commit path; until the file is in place,
   * `read` answers from memory.
   */
  write(jobId: string, trace: ChromeTrace): string {
    const name = `${jobId}.json`;
    const text = JSON.stringify(trace);
    this.writing.set(name, text);
    const done: Promise<void> = this.writer.write(this.pathFor(jobId), text).then((e) => {
      if (e) this.onWriteError(jobId, e);
      if (this.writing.get(name) === text) this.writing.delete(name);
      this.flushing.delete(done);
    });
    this.flushing.add(done);
    return name;
  }

  read(name: string): ChromeTrace {
    const pending = this.writing.get(name);
    return JSON.parse(pending ?? readFileSync(join(this.dir, name), 'utf8')) as ChromeTrace;
  }

  /** Resolves once every trace written so far is on disk (or has failed). */
  async flush(): Promise<void> {
    while (this.flushing.size > 0) await Promise.all([...this.flushing]);
  }

  /** Flushes, then stops the writer thread (a later write starts it again). */
  async close(): Promise<void> {
    await this.flush();
    await this.writer.close();
  }
}

export interface TraceTimes {
  /** Epoch ms when the result was serialized and stored (the last step before the commit). */
  readonly resultStoredAt?: number;
  readonly placement?: string;
}

/** Builds a job's Chrome trace from its record, its runtime events and its own spans. */
export function buildJobTrace(
  job: JobRecord,
  ev: JobEvents | undefined,
  times: TraceTimes = {},
  nowMs = Date.now(),
): ChromeTrace {
  const rec = new TraceRecorder({ originUs: job.createdAt * 1000 });
  const us = (ms: number): number => ms * 1000;
  const track = `job ${job.id}`;
  const startMs = job.startedAt ?? (job.state === 'queued' ? nowMs : (job.finishedAt ?? nowMs));
  rec.span(track, 'queued', us(job.createdAt), us(startMs), 'job', {
    priority: job.priority,
    tenant: job.tenantId,
  });
  if (job.startedAt !== null) {
    const endMs = job.finishedAt ?? nowMs;
    rec.span(track, 'placement', us(job.startedAt), us(job.startedAt) + 1, 'job', {
      device: job.device,
      jobClass: job.jobClass,
      reason: times.placement ?? job.placement ?? 'scheduler',
    });
    rec.span(track, `run ${job.type}`, us(job.startedAt), us(endMs), 'job', {
      attempt: job.attempt,
      state: job.state,
      ...(job.error ? { error: job.error.code } : {}),
    });
    for (const s of ev?.spans ?? []) rec.span(track, s.name, s.startUs, s.endUs, 'job', s.args);
    if (times.resultStoredAt !== undefined)
      rec.span(track, 'result', us(endMs), us(times.resultStoredAt), 'job');
  }
  for (const t of ev?.tasks ?? []) rec.onTaskEnd(t);
  for (const t of ev?.transfers ?? []) rec.onTransfer(t);
  const trace = rec.toJSON();
  trace.otherData = {
    ...trace.otherData,
    job: job.id,
    type: job.type,
    state: job.state,
    droppedEvents: ev?.dropped ?? 0,
  };
  return trace;
}
