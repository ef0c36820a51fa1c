/**
 * Server-sent events written from one setImmediate after the current turn. A generation step calls every
 * live stream's token callback in one synchronous loop, and the engine launches its next step from the
 * microtasks that follow: written in the callbacks, a step's ~256 chunks (a socket write each) held the
 * next launch back by their whole cost; written from the check phase, they run while the GPU computes that
 * next step. One queue for all streams, so each stream's chunks and its end keep their order; a stream
 * whose socket is gone is skipped (its client's 'close' has already aborted the sequence).
 */
import type { ServerResponse } from 'node:http';

interface Pending {
  readonly res: ServerResponse;
  readonly data: string;
  readonly end: boolean;
}

const queue: Pending[] = [];
let scheduled = false;

function flush(): void {
  scheduled = false;
  for (const w of queue.splice(0)) {
    if (w.res.destroyed || w.res.writableEnded) continue;
    if (w.end) w.res.end(w.data);
    else w.res.write(w.data);
  }
}

export class DeferredSse {
  private ended = false;

  constructor(private readonly res: ServerResponse) {}

  /** Whether `end` was called (the end itself may still be queued). */
  get closing(): boolean {
    return this.ended;
  }

  write(data: string): void {
    this.push(data, false);
  }

  end(data: string): void {
    this.ended = true;
    this.push(data, true);
  }

  private push(data: string, end: boolean): void {
    queue.push({ res: this.res, data, end });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  }
}
