/**
 * Per-job timelines. While a job runs, runtime events tagged with its id are collected here (converted
 * to epoch microseconds so that a trace outlives the process clock); at the end the job's trace is
 * written next to the database. A trace is Chrome Trace Event JSON built with the runtime's
 * TraceRecorder: job-level spans (queued, placement, run, commit) on a "job" track above the
 * runtime's per-queue and per-copy-engine tracks.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Observer, TaskEvent, TransferEvent } from '../../obs/observer.js';
import { TraceRecorder, type ChromeTrace } from '../../obs/trace.js';
import { BackgroundFileWriter } from './file-writer.js';
import type { JobRecord } from '../store/job-store.js';

/** performance.now()-based µs → epoch µs. */
const EPOCH_OFFSET_US = performance.timeOrigin * 1000;
const MAX_EVENTS_PER_JOB = 200_000;
/**
 * Traces are handed to the writer thread in batches, at most this long after the first of a batch was
 * committed (or sooner, once BATCH_MAX are waiting): one message per job cost the commit path ~0.1 ms.
 */
const BATCH_MS = 50;
const BATCH_MAX = 64;

/** A trace committed but not yet in its file: built (and serialized) only when first needed. */
interface Unwritten {
  readonly jobId: string;
  build: (() => ChromeTrace) | null;
  trace: ChromeTrace | null;
  text: string | null;
}

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
  /** The devices the job's tasks ran on (kept even when events are dropped). */
  readonly devices: Set<string>;
  dropped: number;
}

export class JobTraceCollector implements Observer {
  private readonly live = new Map<string, JobEvents>();
  /** Traces not yet in their file, by file name (served from here until the file is in place). */
  private readonly unwritten = new Map<string, Unwritten>();
  private batched = 0;
  private batchTimer: NodeJS.Timeout | null = null;
  /** Traces to build and serialize, one per event-loop turn (see `write`). */
  private toSerialize: Unwritten[] = [];
  private serializeScheduled = false;
  private readonly serializeFn = (): void => this.serializeNext();
  /** Traces in a batch on its way to the writer thread. */
  private readonly sent = new Set<Unwritten>();
  private readonly flushing = new Set<Promise<void>>();
  private readonly writer = new BackgroundFileWriter();
  /** Where a failed background write is reported (the service logs it). */
  onWriteError: (jobId: string, e: unknown) => void = () => undefined;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  begin(jobId: string): JobEvents {
    const ev: JobEvents = { tasks: [], transfers: [], spans: [], devices: new Set(), dropped: 0 };
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
    const id = e.tags?.['job'];
    if (id !== undefined) this.live.get(id)?.devices.add(e.deviceId);
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
   * Takes a committed job's trace and returns its file name relative to the dir. The trace is built,
   * serialized and written (atomically, tmp + rename, on a writer thread) later, with others in one
   * batch: a synchronous write cost ~0.6 ms on every job's commit path, and a message to the writer per
   * job ~0.1 ms. Each trace is built and serialized on its own, in a setImmediate after the commit that
   * wrote it (after that job's answer has gone out), not all 64 together when the batch is sent: a batch
   * serialized at once held the loop for ~1-2 ms every 64 jobs, a tail on one request in 64.
   * Until the file is in place, `read` answers from memory.
   */
  write(jobId: string, trace: ChromeTrace | (() => ChromeTrace)): string {
    const name = `${jobId}.json`;
    const built = typeof trace === 'function' ? null : trace;
    const u: Unwritten = {
      jobId,
      build: built ? null : (trace as () => ChromeTrace),
      trace: built,
      text: null,
    };
    this.unwritten.set(name, u);
    this.toSerialize.push(u);
    if (!this.serializeScheduled) {
      this.serializeScheduled = true;
      setImmediate(this.serializeFn);
    }
    if (++this.batched >= BATCH_MAX) this.writeBatch();
    else this.batchTimer ??= setTimeout(() => this.writeBatch(), BATCH_MS);
    return name;
  }

  /** Serializes the oldest waiting trace (one per turn), then comes back for the next. */
  private serializeNext(): void {
    this.serializeScheduled = false;
    let u = this.toSerialize.shift();
    while (u && (u.text !== null || this.unwritten.get(`${u.jobId}.json`) !== u))
      u = this.toSerialize.shift();
    if (u) this.serialize(u);
    if (this.toSerialize.length > 0) {
      this.serializeScheduled = true;
      setImmediate(this.serializeFn);
    }
  }

  /** Builds and serializes `u` (false when that failed: it is dropped and reported). */
  private serialize(u: Unwritten): boolean {
    try {
      u.text = JSON.stringify(u.trace ?? u.build!());
    } catch (e) {
      this.unwritten.delete(`${u.jobId}.json`);
      this.onWriteError(u.jobId, e);
      return false;
    }
    u.trace = null;
    u.build = null;
    return true;
  }

  /** The trace, or null when its file is missing (a crash before its batch was written). */
  read(name: string): ChromeTrace | null {
    const u = this.unwritten.get(name);
    if (u) {
      if (u.text !== null) return JSON.parse(u.text) as ChromeTrace;
      return (u.trace ??= u.build!());
    }
    const path = join(this.dir, name);
    if (!existsSync(path)) return null;
    return JSON.parse(readFileSync(path, 'utf8')) as ChromeTrace;
  }

  /**
   * Sends the traces waiting for a batch to the writer thread in one message (serializing any that
   * their setImmediate has not reached yet).
   */
  private writeBatch(): void {
    if (this.batchTimer) clearTimeout(this.batchTimer);
    this.batchTimer = null;
    this.batched = 0;
    const batch: Unwritten[] = [];
    const files: { file: string; text: string }[] = [];
    for (const [name, u] of this.unwritten) {
      if (this.sent.has(u)) continue; // already in a batch on its way
      if (u.text === null && !this.serialize(u)) continue;
      this.sent.add(u);
      batch.push(u);
      files.push({ file: join(this.dir, name), text: u.text! });
    }
    if (batch.length === 0) return;
    const done: Promise<void> = this.writer.writeMany(files).then((errors) => {
      batch.forEach((u, i) => {
        const e = errors[i];
        if (e) this.onWriteError(u.jobId, e);
        const name = `${u.jobId}.json`;
        this.sent.delete(u);
        if (this.unwritten.get(name) === u) this.unwritten.delete(name);
      });
      this.flushing.delete(done);
    });
    this.flushing.add(done);
  }

  /** Resolves once every trace written so far is on disk (or has failed). */
  async flush(): Promise<void> {
    this.writeBatch();
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
