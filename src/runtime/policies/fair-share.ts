/**
 * Fair sharing of devices between share groups in the central-queue policies (eager, prio), at the
 * task level (stride scheduling over device time, as Kubernetes' and Slurm's fair share do over their
 * own units; the accounts are share-ledger.ts's, which ws and dmda/dmdas order by too):
 *
 * - Every group's ready tasks wait in their own lane. A free worker takes the next task from the
 *   active group with the least pass (device time charged divided by weight); within a group, the
 *   policy's own order (priority for prio).
 * - A worker holds at most FAIR_INFLIGHT_US of expected work (or one task whose length is unknown) in
 *   its device queue, chain followers included: otherwise a group that worked alone and filled a deep
 *   queue (a CUDA stream takes 256 launches) would make a newcomer wait behind all of it whatever the
 *   choice. The rest waits here, where the choice is made. This holds from the first task that names a
 *   group on; a runtime without groups keeps its queues' full depth.
 */
import type { ShareGroup } from '../shares.js';
import type { Lane } from './lane.js';
import type { PolicyContext, SchedTask, WorkerSlot } from './policy.js';
import { ShareLedger } from './share-ledger.js';

export { FAIR_CREDIT_US, FAIR_INFLIGHT_US } from './share-ledger.js';

export class FairShare {
  private readonly ledger: ShareLedger;
  private readonly lanes = new Map<ShareGroup, Lane>();

  constructor(
    ctx: PolicyContext,
    defaultLane: Lane,
    private readonly newLane: () => Lane,
  ) {
    this.ledger = new ShareLedger(ctx, defaultLane.count);
    this.lanes.set(this.ledger.defaultGroup, defaultLane);
  }

  private laneOf(g: ShareGroup): Lane {
    let lane = this.lanes.get(g);
    if (lane === undefined) this.lanes.set(g, (lane = this.newLane()));
    return lane;
  }

  push(task: SchedTask): void {
    this.laneOf(this.ledger.queued(task)).push(task);
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    const ledger = this.ledger;
    if (ledger.full(worker)) return undefined;
    const wi = worker.index;
    let best: ShareGroup | null = null;
    let bestTask: SchedTask | undefined;
    for (const g of ledger.active) {
      if (g.pending === 0) continue;
      const head = this.lanes.get(g)!.bestFor(wi)?.peek();
      if (head === undefined) continue;
      if (best === null || ledger.before(g, best) || (!ledger.before(best, g) && head.seq < bestTask!.seq)) {
        best = g;
        bestTask = head;
      }
    }
    ledger.advanceClock();
    if (best === null) return undefined;
    const t = this.lanes.get(best)!.pop(wi)!;
    ledger.taken(t, worker);
    return t;
  }

  admitForward(task: SchedTask, worker: WorkerSlot): boolean {
    return this.ledger.admitForward(task, worker);
  }

  forwarded(task: SchedTask, worker: WorkerSlot): void {
    this.ledger.forwarded(task, worker);
  }

  completed(task: SchedTask, _worker: WorkerSlot, durationUs: number): void {
    this.ledger.completed(task, durationUs);
  }
}
