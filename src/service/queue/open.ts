/**
 * Picks the queue implementation from its URL: redis:// or rediss:// → BullMQ; sqlite:PATH or a plain
 * path → the embedded SQLite queue. Parsed once by the caller's config and passed down.
 */
import { BullQueue } from './bullmq-queue.js';
import { EmbeddedQueue } from './embedded-queue.js';
import type { JobQueue, QueueTuning } from './queue.js';

export interface QueueOpenOptions {
  readonly tuning?: QueueTuning;
  readonly prefix?: string;
}

export async function openQueue(url: string, o: QueueOpenOptions = {}): Promise<JobQueue> {
  if (/^rediss?:\/\//.test(url))
    return BullQueue.open({
      url,
      ...(o.tuning ? { tuning: o.tuning } : {}),
      ...(o.prefix ? { prefix: o.prefix } : {}),
    });
  const path = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  return new EmbeddedQueue({ path, ...(o.tuning ? { tuning: o.tuning } : {}) });
}
