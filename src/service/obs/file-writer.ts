/**
 * Writes files atomically (tmp + rename) on a worker thread, so a job's commit path pays one
 * postMessage instead of an open/write/close/rename on the service's event loop (~0.1-0.3 ms a file
 * even through the async fs API, whose JS side still runs on the loop).
 */
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { writeFileSync, renameSync } = require('node:fs');
parentPort.on('message', (m) => {
  try {
    writeFileSync(m.file + '.tmp', m.text);
    renameSync(m.file + '.tmp', m.file);
    parentPort.postMessage({ id: m.id, error: null });
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message ? e.message : e) });
  }
});
`;

interface Reply {
  readonly id: number;
  readonly error: string | null;
}

export class BackgroundFileWriter {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, (error: Error | null) => void>();

  /** Resolves with null once `text` is in `file`, or with the error that stopped it (never rejects). */
  write(file: string, text: string): Promise<Error | null> {
    const w = this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      if (this.pending.size === 1) w.ref(); // keep the process up while a write is in flight
      w.postMessage({ id, file, text });
    });
  }

  get inFlight(): number {
    return this.pending.size;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
    for (const done of this.pending.values()) done(new Error('the file writer was closed'));
    this.pending.clear();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_SOURCE, { eval: true });
    w.unref();
    w.on('message', (m: Reply) => {
      const done = this.pending.get(m.id);
      if (!done) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) w.unref();
      done(m.error === null ? null : new Error(m.error));
    });
    w.on('error', (e) => this.failAll(e));
    w.on('exit', () => {
      if (this.worker === w) this.worker = null;
      this.failAll(new Error('the file writer thread exited'));
    });
    this.worker = w;
    return w;
  }

  private failAll(e: Error): void {
    for (const done of this.pending.values()) done(e);
    this.pending.clear();
  }
}
