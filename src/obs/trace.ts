/**
 * Chrome Trace Event JSON (opens in Perfetto and chrome://tracing): one track (thread) per execution
 * queue and per copy engine, a complete ("X") event per task and per transfer.
 */
import { writeFileSync } from 'node:fs';
import type { Observer, TaskEvent, TransferEvent } from './observer.js';

export interface TraceEvent {
  name: string;
  cat: string;
  ph: 'X' | 'M' | 'i';
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  s?: 'g' | 'p' | 't';
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData?: Record<string, unknown>;
}

export class TraceRecorder implements Observer {
  private readonly events: TraceEvent[] = [];
  private readonly tracks = new Map<string, number>();
  private readonly pid: number;
  private readonly origin: number;
  private readonly limit: number;
  dropped = 0;

  constructor(options: { pid?: number; originUs?: number; maxEvents?: number } = {}) {
    this.pid = options.pid ?? 1;
    this.origin = options.originUs ?? 0;
    this.limit = options.maxEvents ?? 1_000_000;
  }

  private track(name: string): number {
    let tid = this.tracks.get(name);
    if (tid === undefined) {
      tid = this.tracks.size + 1;
      this.tracks.set(name, tid);
      this.events.push({
        name: 'thread_name',
        cat: '__metadata',
        ph: 'M',
        ts: 0,
        pid: this.pid,
        tid,
        args: { name },
      });
      this.events.push({
        name: 'thread_sort_index',
        cat: '__metadata',
        ph: 'M',
        ts: 0,
        pid: this.pid,
        tid,
        args: { sort_index: tid },
      });
    }
    return tid;
  }

  private push(e: TraceEvent): void {
    if (this.events.length >= this.limit) {
      this.dropped++;
      return;
    }
    this.events.push(e);
  }

  /** Adds a span on a named track (used by the service for queue and job spans). */
  span(
    track: string,
    name: string,
    startUs: number,
    endUs: number,
    cat: string,
    args?: Record<string, unknown>,
  ): void {
    this.push({
      name,
      cat,
      ph: 'X',
      ts: startUs - this.origin,
      dur: Math.max(0, endUs - startUs),
      pid: this.pid,
      tid: this.track(track),
      ...(args ? { args } : {}),
    });
  }

  onTaskEnd(e: TaskEvent): void {
    const args: Record<string, unknown> = {
      task: e.taskId,
      op: e.op,
      ok: e.ok,
      flops: e.flops,
      bytes: e.bytes,
    };
    args['waitUs'] = Math.round(e.startUs - e.readyUs);
    if (e.errorCode) args['error'] = e.errorCode;
    if (e.placement) args['placement'] = e.placement;
    if (e.tags) Object.assign(args, e.tags);
    this.span(e.queueId, e.name, e.startUs, e.endUs, e.ok ? 'task' : 'task,failed', args);
  }

  onTransfer(e: TransferEvent): void {
    this.span(e.engine, `copy ${e.from}→${e.to}`, e.startUs, e.endUs, 'transfer', {
      tensor: e.tensorId,
      bytes: e.bytes,
      GBps: e.endUs > e.startUs ? +(e.bytes / (e.endUs - e.startUs) / 1e3).toFixed(3) : undefined,
      ...(e.tags ?? {}),
    });
  }

  toJSON(): ChromeTrace {
    return {
      traceEvents: [...this.events],
      displayTimeUnit: 'ms',
      otherData: { producer: 'tandem', dropped: this.dropped },
    };
  }

  writeFile(path: string): void {
    writeFileSync(path, JSON.stringify(this.toJSON()));
  }

  get size(): number {
    return this.events.length;
  }
}
