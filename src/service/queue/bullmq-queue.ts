/**
 * The queue on BullMQ (Redis): one BullMQ queue per device class ("lane"), so an agent only ever pulls
 * work its devices can run; priorities, retries with exponential backoff, stalled-job recovery (locks
 * renewed at lockMs/2, checked every stalledCheckMs by every live worker) and the global rate limiter
 * are BullMQ's own. Events come from QueueEvents (Redis streams), so every process sees every job's
 * completion, final failure, stall and progress; non-final failures are reported by the worker that saw
 * them.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter, setMaxListeners } from 'node:events';
import { DelayedError, Job, Queue, QueueEvents, UnrecoverableError, Worker, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { connectRedis } from './redis-conn.js';
import {
  DEFAULT_TUNING,
  JobFailure,
  MAX_PRIORITY,
  clampPriority,
  emptyCounts,
  type ConsumeOptions,
  type Consumer,
  type JobQueue,
  type QueueCounts,
  type QueueEvent,
  type QueueJobSpec,
  type QueueTuning,
} from './queue.js';

interface WireData {
  readonly d: Readonly<Record<string, unknown>>;
  readonly c: string;
  readonly m: number;
  readonly p: number;
  /** A packed envelope: several small jobs in one BullMQ job (see `pack`). */
  readonly k?: readonly WireItem[];
}

interface WireItem {
  readonly i: string;
  readonly d: Readonly<Record<string, unknown>>;
}

export interface BullQueueOptions {
  readonly url: string;
  /** Redis key prefix: several Tandem installations (or test runs) share one Redis apart. */
  readonly prefix?: string;
  readonly tuning?: QueueTuning;
  /** Finished jobs kept in Redis for inspection (the store keeps them all). */
  readonly keepCompleted?: number;
  /**
   * Up to this many small jobs (no device memory, same lane and priority, added together) travel in one
   * BullMQ job. BullMQ spends two Lua scripts and a lock per job, which caps a loaded 2-core machine
   * near 1-2 k jobs/s; packing amortizes that. An envelope is delivered, retried and recovered as a
   * whole: with a job store, items already committed are skipped on a re-delivery (exactly once still);
   * a packed item cannot be cancelled in the queue (the store's cancel stops it). Default 1 (off).
   */
  readonly pack?: number;
}

const DECLINE_DELAY_MS = 250;

export class BullQueue implements JobQueue {
  readonly kind = 'bullmq' as const;
  private readonly queues = new Map<string, Queue<WireData>>();
  private readonly events = new Map<string, QueueEvents>();
  private readonly emitter = new EventEmitter();
  private readonly consumers = new Set<Consumer>();
  private readonly tuning: QueueTuning;
  private readonly prefix: string;
  private readonly lanesKey: string;

  private constructor(
    private readonly conn: Redis,
    private readonly opts: BullQueueOptions,
  ) {
    this.tuning = opts.tuning ?? DEFAULT_TUNING;
    this.prefix = opts.prefix ?? 'tandem';
    this.lanesKey = `${this.prefix}:lanes`;
    this.emitter.setMaxListeners(0);
  }

  /** Connects (TANDEM_ERR_UNAVAILABLE naming the URL if Redis does not answer). */
  static async open(opts: BullQueueOptions): Promise<BullQueue> {
    const conn = await connectRedis(opts.url);
    return new BullQueue(conn, opts);
  }

  /** The shared connection (agent heartbeats and the autoscaler read from the same Redis). */
  get redis(): Redis {
    return this.conn;
  }

  private lane(deviceClass: string): Queue<WireData> {
    let q = this.queues.get(deviceClass);
    if (!q) {
      q = new Queue<WireData>(laneName(deviceClass), { connection: this.conn, prefix: this.prefix });
      q.on('error', () => undefined); // connection errors surface on the shared connection; it reconnects
      this.queues.set(deviceClass, q);
    }
    return q;
  }

  async add(jobs: readonly QueueJobSpec[]): Promise<void> {
    const byLane = new Map<string, QueueJobSpec[]>();
    for (const j of jobs) {
      const list = byLane.get(j.deviceClass) ?? [];
      list.push(j);
      byLane.set(j.deviceClass, list);
    }
    if (byLane.size > 0) await this.conn.sadd(this.lanesKey, ...byLane.keys());
    for (const [lane, list] of byLane) await this.lane(lane).addBulk(this.envelopes(list));
  }

  private envelopes(list: readonly QueueJobSpec[]) {
    const pack = Math.max(1, this.opts.pack ?? 1);
    const out: { name: string; data: WireData; opts: JobsOptions }[] = [];
    let run: QueueJobSpec[] = [];
    const flush = () => {
      if (run.length === 1) out.push(single(run[0]!));
      else if (run.length > 1) {
        const first = run[0]!;
        out.push({
          name: 'pack',
          data: {
            d: {},
            c: first.deviceClass,
            m: 0,
            p: clampPriority(first.priority),
            k: run.map((j) => ({ i: j.id, d: j.data })),
          },
          opts: { ...this.jobOpts(first), jobId: `pack-${first.id}` },
        });
      }
      run = [];
    };
    const single = (j: QueueJobSpec) => ({
      name: 'job',
      data: { d: j.data, c: j.deviceClass, m: j.memBytes, p: clampPriority(j.priority) },
      opts: this.jobOpts(j),
    });
    for (const j of list) {
      if (pack === 1 || j.memBytes > 0) {
        flush();
        out.push(single(j));
        continue;
      }
      if (
        run.length > 0 &&
        (run.length >= pack || clampPriority(run[0]!.priority) !== clampPriority(j.priority))
      )
        flush();
      run.push(j);
    }
    flush();
    return out;
  }

  private jobOpts(j: QueueJobSpec): JobsOptions {
    return {
      jobId: j.id,
      // BullMQ: 1 is the most urgent. Every job gets a priority so all lanes order the same way.
      priority: MAX_PRIORITY + 1 - clampPriority(j.priority),
      attempts: j.attempts ?? 3,
      backoff: { type: 'exponential', delay: j.backoffMs ?? 500 },
      removeOnComplete: { count: this.opts.keepCompleted ?? 1000 },
      removeOnFail: { count: 10_000 },
    };
  }

  consume(o: ConsumeOptions): Consumer {
    const id = `c_${randomBytes(4).toString('hex')}`;
    const abort = new AbortController();
    setMaxListeners(0, abort.signal); // every running job may listen for the abort
    const workers = o.deviceClasses.map((lane) => {
      const w = new Worker<WireData>(
        laneName(lane),
        async (job, token) => {
          const data = job.data;
          if (o.fits && !o.fits({ id: job.id ?? '', deviceClass: data.c, memBytes: data.m })) {
            // Not for us (not enough free memory now): back in the lane shortly, for whoever fits.
            await job.moveToDelayed(Date.now() + DECLINE_DELAY_MS, token);
            throw new DelayedError();
          }
          if (data.k) return { packed: await this.runPacked(job, data, o, abort.signal) };
          try {
            return await o.handler(
              {
                id: job.id ?? '',
                deviceClass: data.c,
                priority: data.p,
                memBytes: data.m,
                data: data.d,
                attemptsMade: job.attemptsMade,
                progress: (fraction, message = '') => job.updateProgress({ fraction, message }),
              },
              abort.signal,
            );
          } catch (e) {
            if (e instanceof JobFailure && !e.retry) throw new UnrecoverableError(e.message);
            throw e;
          }
        },
        {
          connection: this.conn,
          prefix: this.prefix,
          concurrency: o.concurrency,
          lockDuration: this.tuning.lockMs,
          stalledInterval: this.tuning.stalledCheckMs,
          maxStalledCount: this.tuning.maxStalls,
          ...(o.rateLimit ? { limiter: { max: o.rateLimit.max, duration: o.rateLimit.durationMs } } : {}),
        },
      );
      w.on('error', () => undefined); // reconnects on its own; errors are visible on the connection
      w.on('failed', (job, err) => {
        if (!job || err instanceof DelayedError || err.name === 'DelayedError') return;
        const attempts = job.opts.attempts ?? 1;
        if (job.attemptsMade < attempts && !(err instanceof UnrecoverableError))
          this.emit({
            type: 'failed',
            id: job.id ?? '',
            error: err.message,
            attemptsMade: job.attemptsMade,
            final: false,
          });
      });
      return w;
    });
    const consumer: Consumer = {
      id,
      close: async (graceMs = 5000) => {
        this.consumers.delete(consumer);
        const closing = Promise.all(workers.map((w) => w.close()));
        const timer = setTimeout(() => abort.abort(), graceMs);
        try {
          await closing;
        } finally {
          clearTimeout(timer);
        }
      },
    };
    this.consumers.add(consumer);
    return consumer;
  }

  /** Runs an envelope's items side by side; any failure re-delivers the envelope (after backoff). */
  private async runPacked(
    job: Job<WireData>,
    data: WireData,
    o: ConsumeOptions,
    signal: AbortSignal,
  ): Promise<[string, unknown][]> {
    const items = data.k ?? [];
    const results = await Promise.all(
      items.map((it) =>
        o.handler(
          {
            id: it.i,
            deviceClass: data.c,
            priority: data.p,
            memBytes: 0,
            data: it.d,
            attemptsMade: job.attemptsMade,
            progress: () => Promise.resolve(), // an envelope's items report progress through the store
          },
          signal,
        ),
      ),
    );
    return items.map((it, n) => [it.i, results[n]]);
  }

  async counts(deviceClasses?: readonly string[]): Promise<Record<string, QueueCounts>> {
    const lanes = deviceClasses ?? (await this.conn.smembers(this.lanesKey));
    const out: Record<string, QueueCounts> = {};
    for (const lane of lanes) {
      const c = await this.lane(lane).getJobCounts(
        'wait',
        'prioritized',
        'waiting-children',
        'active',
        'delayed',
        'completed',
        'failed',
      );
      out[lane] = {
        ...emptyCounts(),
        waiting: (c['wait'] ?? 0) + (c['prioritized'] ?? 0),
        active: c['active'] ?? 0,
        delayed: c['delayed'] ?? 0,
        completed: c['completed'] ?? 0,
        failed: c['failed'] ?? 0,
      };
    }
    return out;
  }

  async cancel(id: string, deviceClass: string): Promise<boolean> {
    const job = await Job.fromId<WireData>(this.lane(deviceClass), id);
    if (!job) return false;
    const state = await job.getState();
    if (state !== 'waiting' && state !== 'prioritized' && state !== 'delayed') return false;
    try {
      await job.remove();
      return true;
    } catch {
      return false; // taken by a worker in between
    }
  }

  on(listener: (e: QueueEvent) => void): () => void {
    this.emitter.on('event', listener);
    void this.watchLanes();
    return () => this.emitter.off('event', listener);
  }

  /** Subscribes to the events of every lane known now (and of lanes added later, on the next call). */
  private async watchLanes(): Promise<void> {
    const lanes = await this.conn.smembers(this.lanesKey).catch(() => [] as string[]);
    for (const lane of lanes) this.watch(lane);
  }

  /** Starts listening to a lane's events (on() callers that add jobs later call this through add). */
  watch(lane: string): void {
    if (this.events.has(lane)) return;
    const ev = new QueueEvents(laneName(lane), { connection: this.conn.duplicate(), prefix: this.prefix });
    ev.on('error', () => undefined);
    ev.on('completed', ({ jobId, returnvalue }) => {
      const r = parseReturn(returnvalue);
      const packed = (r as { packed?: [string, unknown][] } | null)?.packed;
      if (jobId.startsWith('pack-') && Array.isArray(packed))
        for (const [id, result] of packed) this.emit({ type: 'completed', id, result });
      else this.emit({ type: 'completed', id: jobId, result: r });
    });
    ev.on('failed', ({ jobId, failedReason }) =>
      this.emit({ type: 'failed', id: jobId, error: failedReason, attemptsMade: -1, final: true }),
    );
    ev.on('stalled', ({ jobId }) => this.emit({ type: 'stalled', id: jobId }));
    ev.on('progress', ({ jobId, data }) => {
      const p = (typeof data === 'object' && data !== null ? data : {}) as {
        fraction?: number;
        message?: string;
      };
      this.emit({ type: 'progress', id: jobId, progress: p.fraction ?? 0, message: p.message ?? '' });
    });
    this.events.set(lane, ev);
  }

  /** Resolves once the event streams of these lanes are being read (tests wait for it). */
  async eventsReady(lanes: readonly string[]): Promise<void> {
    for (const l of lanes) this.watch(l);
    await Promise.all(lanes.map((l) => this.events.get(l)!.waitUntilReady()));
  }

  private emit(e: QueueEvent): void {
    this.emitter.emit('event', e);
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.close(1000)));
    await Promise.all([...this.events.values()].map((e) => e.close()));
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.conn.disconnect();
  }
}

function laneName(deviceClass: string): string {
  return `jobs-${deviceClass}`;
}

function parseReturn(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}
