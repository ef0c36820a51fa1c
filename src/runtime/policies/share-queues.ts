/**
 * A worker's queue of placed tasks split by share group, for the policies that place a task on a
 * worker when it becomes ready (dmda, dmdas): where a task runs is still their decision (expected finish
 * time), but which of the tasks placed on a worker runs next is the ledger's (the group most behind in
 * device time per weight), and within a group the policy's own order (FIFO for dmda, priority for
 * dmdas). So one tenant's flood placed on a device does not stand between another tenant's task placed
 * there and the device.
 */
import type { ShareGroup } from '../shares.js';
import type { SchedTask } from './policy.js';
import type { ShareLedger } from './share-ledger.js';

export interface WorkerQueue {
  push(t: SchedTask): void;
  pop(): SchedTask | undefined;
  readonly length: number;
}

export class ShareSplitQueue implements WorkerQueue {
  private readonly byGroup = new Map<ShareGroup, WorkerQueue>();
  private n: number;

  /** `held`: the worker's queue so far, all of it the default group's (sharing begins now). */
  constructor(
    private readonly ledger: ShareLedger,
    private readonly newQueue: () => WorkerQueue,
    held: WorkerQueue,
  ) {
    this.byGroup.set(ledger.defaultGroup, held);
    this.n = held.length;
  }

  push(t: SchedTask): void {
    const g = this.ledger.groupOf(t);
    let q = this.byGroup.get(g);
    if (q === undefined) this.byGroup.set(g, (q = this.newQueue()));
    q.push(t);
    this.n++;
  }

  pop(): SchedTask | undefined {
    let best: ShareGroup | null = null;
    let bestQueue: WorkerQueue | null = null;
    for (const [g, q] of this.byGroup) {
      if (q.length === 0) continue;
      if (best === null || this.ledger.before(g, best)) {
        best = g;
        bestQueue = q;
      }
    }
    const t = bestQueue?.pop();
    if (t) this.n--;
    return t;
  }

  get length(): number {
    return this.n;
  }
}
