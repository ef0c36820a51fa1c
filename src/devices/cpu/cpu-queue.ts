/**
 * The main-thread side of one CPU worker thread: an in-order ExecQueue that batches launches into
 * one message per tick and settles completions from the worker's batched replies. Because the
 * queue is in order, completions come back in launch order and need no lookup table.
 */
import { Worker } from 'node:worker_threads';
import { TandemError } from '../../core/errors.js';
import type { ErrorCode } from '../../core/errors.js';
import type { ExecQueue, HostBuffer, LaunchRequest, LaunchTiming } from '../device.js';
import { Fifo } from '../../core/queues.js';
import {
  EARLY_FLUSH_TASKS,
  RESULT_STRIDE,
  TASK_STRIDE,
  type CustomCpuImpl,
  type FromWorker,
  type ToWorker,
  type WireExtra,
  type WorkerConfig,
} from './protocol.js';

type Completion = (err: Error | null, timing?: LaunchTiming) => void;

const workerUrl = new URL('./worker.js', import.meta.url);
const originMs = performance.timeOrigin;
/** Keep about this much work in flight per worker: deep for tiny tasks, shallow for big ones. */
const TARGET_INFLIGHT_US = 2000;
/** Tasks a fresh batch buffer holds before it grows (it is sized like the previous batch). */
const MIN_BATCH = 64;

function hasKeys(o: object): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return true;
  return false;
}

export function isCustomCpuImpl(x: unknown): x is CustomCpuImpl {
  return !!x && typeof x === 'object' && typeof (x as CustomCpuImpl).module === 'string';
}

export class CpuQueue implements ExecQueue {
  readonly id: string;
  private readonly worker: Worker;
  private readonly known = new Set<number>();
  /** Launched, not yet completed, in launch order (two lists: no record per launch). */
  private readonly pendingIds = new Fifo<number>();
  private readonly pendingDone = new Fifo<Completion>();
  private readonly opIndex = new Map<string, number>();
  private newOps: string[] = [];
  /** The batch being filled (its buffer is handed to the worker at flush). */
  private tasks = new Float64Array(MIN_BATCH * TASK_STRIDE);
  private taskCount = 0;
  private extras: WireExtra[] = [];
  private newBufs: Array<readonly [number, SharedArrayBuffer]> = [];
  private flushScheduled = false;
  private closed = false;
  private ewmaUs = 1000;
  private readonly maxDepth: number;
  /** Scratch timing handed to completions; the executor copies it at once. */
  private readonly timing = { startUs: 0, endUs: 0 };
  engine = 'unknown';
  blasReason = '';
  readonly ready: Promise<void>;

  constructor(
    deviceId: string,
    index: number,
    maxDepth: number,
    gemmEngine: WorkerConfig['gemmEngine'],
    blasThreads?: number,
    kernelTable?: string,
  ) {
    this.id = `${deviceId}.w${index}`;
    this.maxDepth = maxDepth;
    const config: WorkerConfig = {
      index,
      gemmEngine,
      ...(blasThreads ? { blasThreads } : {}),
      ...(kernelTable ? { kernelTable } : {}),
    };
    this.worker = new Worker(workerUrl, { workerData: config });
    this.worker.unref();
    this.ready = new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(e);
      this.worker.once('error', onError);
      this.worker.once('message', (m: FromWorker) => {
        this.worker.off('error', onError);
        if (m.t === 'ready') {
          this.engine = m.engine;
          this.blasReason = m.blasReason;
        }
        this.worker.on('message', (msg: FromWorker) => this.onMessage(msg));
        this.worker.on('error', (e) => this.failAll(e));
        resolve();
      });
    });
  }

  /** Adaptive: enough launches to cover ~2 ms of work, between 2 and maxDepth. */
  get depth(): number {
    return Math.max(2, Math.min(this.maxDepth, Math.ceil(TARGET_INFLIGHT_US / this.ewmaUs)));
  }

  launch(req: LaunchRequest, done: Completion): void {
    if (this.closed) throw new TandemError('TANDEM_ERR_CLOSED', `${this.id} is closed`);
    let op = this.opIndex.get(req.op);
    if (op === undefined) {
      op = this.opIndex.size;
      this.opIndex.set(req.op, op);
      this.newOps.push(req.op);
    }
    let extra = -1;
    const custom = isCustomCpuImpl(req.impl);
    const inlinePred = req.after.length === 1 ? req.after[0]! : -1;
    if (req.args.length || req.after.length > 1 || custom || hasKeys(req.scalars)) {
      const buffers: number[] = [];
      for (const a of req.args) {
        const hb = a.buffer as HostBuffer;
        if (!this.known.has(hb.id)) {
          this.known.add(hb.id);
          this.newBufs.push([hb.id, hb.sab]);
        }
        buffers.push(hb.id);
      }
      extra = this.extras.length;
      this.extras.push({
        buffers,
        descs: req.args.map((a) => a.desc),
        scalars: req.scalars,
        after: req.after.length > 1 ? req.after : [],
        ...(custom
          ? {
              custom: {
                module: (req.impl as CustomCpuImpl).module,
                export: (req.impl as CustomCpuImpl).export,
              },
            }
          : {}),
      });
    }
    let o = this.taskCount * TASK_STRIDE;
    if (o + TASK_STRIDE > this.tasks.length) {
      const grown = new Float64Array(2 * this.tasks.length);
      grown.set(this.tasks);
      this.tasks = grown;
    }
    const tasks = this.tasks;
    tasks[o++] = req.taskId;
    tasks[o++] = op;
    tasks[o++] = extra;
    tasks[o] = inlinePred;
    this.taskCount++;
    this.pendingIds.push(req.taskId);
    this.pendingDone.push(done);
    if (this.taskCount >= EARLY_FLUSH_TASKS) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  private flush(): void {
    if (this.taskCount === 0 || this.closed) return;
    const tasks = this.tasks;
    const msg: ToWorker = {
      t: 'run',
      newOps: this.newOps,
      count: this.taskCount,
      tasks,
      extras: this.extras,
      bufs: this.newBufs,
    };
    const next = Math.min(EARLY_FLUSH_TASKS, Math.max(MIN_BATCH, this.taskCount));
    this.tasks = new Float64Array(next * TASK_STRIDE);
    this.taskCount = 0;
    this.extras = [];
    this.newBufs = [];
    this.newOps = [];
    this.worker.ref(); // keep the process alive while work is in flight
    this.worker.postMessage(msg, [tasks.buffer]);
  }

  private onMessage(m: FromWorker): void {
    if (m.t !== 'done') return;
    const errors =
      m.errors.length > 0 ? new Map(m.errors.map(([id, code, msg]) => [id, [code, msg] as const])) : null;
    const r = m.results;
    const end = m.count * RESULT_STRIDE;
    for (let i = 0; i < end; i += RESULT_STRIDE) {
      const expected = this.pendingIds.shift();
      if (expected === undefined) break;
      const done = this.pendingDone.shift()!;
      const id = r[i]!;
      if (expected !== id)
        throw new TandemError(
          'TANDEM_ERR_INTERNAL',
          `${this.id}: completion ${id} out of order (expected ${expected})`,
        );
      const startUs = (r[i + 2]! - originMs) * 1000;
      const endUs = (r[i + 3]! - originMs) * 1000;
      this.ewmaUs = 0.9 * this.ewmaUs + 0.1 * Math.max(0.5, endUs - startUs);
      this.timing.startUs = startUs;
      this.timing.endUs = endUs;
      if (r[i + 1] === 1) done(null, this.timing);
      else {
        const [code, message] = errors?.get(id) ?? ['TANDEM_ERR_KERNEL_FAILED', 'failed'];
        const c: ErrorCode = code.startsWith('TANDEM_ERR_')
          ? (code as ErrorCode)
          : 'TANDEM_ERR_KERNEL_FAILED';
        done(new TandemError(c, `${message} (on ${this.id})`, { queue: this.id }), this.timing);
      }
    }
    if (this.pendingIds.length === 0) this.worker.unref();
  }

  release(buf: HostBuffer): void {
    if (!this.known.delete(buf.id) || this.closed) return;
    const msg: ToWorker = { t: 'release', ids: [buf.id] };
    this.worker.postMessage(msg);
  }

  private failAll(e: Error): void {
    const err = new TandemError('TANDEM_ERR_KERNEL_FAILED', `worker ${this.id} stopped: ${e.message}`);
    for (let done = this.pendingDone.shift(); done; done = this.pendingDone.shift()) {
      this.pendingIds.shift();
      done(err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.failAll(new Error('closed'));
    await this.worker.terminate();
  }
}
