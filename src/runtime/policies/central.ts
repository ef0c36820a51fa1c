/**
 * Central-queue policies (eager, prio): ready tasks wait in one queue per eligibility set (the set of
 * workers that can run them), so a worker never scans past tasks it cannot run. A worker pops the
 * best head among the queues it belongs to.
 *
 * Tasks of share groups (rt.submit's `share`) wait in a lane per group, and a free worker takes its
 * next task from the group most behind in device time per weight (fair-share.ts). Until the first
 * such task arrives, everything is the default group's one lane and nothing else runs.
 */
import { FairShare } from './fair-share.js';
import { Lane, type Bucket } from './lane.js';
import type { PolicyContext, SchedTask, SchedulerPolicy, WorkerSlot } from './policy.js';

export abstract class CentralPolicy implements SchedulerPolicy {
  abstract readonly name: string;
  private ctx!: PolicyContext;
  /** The default group's tasks (all tasks, until a share group shows up). */
  private lane!: Lane;
  private fair: FairShare | null = null;
  private count = 0;

  protected abstract newBucket(): Bucket;
  /** True when a must run before b. */
  protected abstract before(a: SchedTask, b: SchedTask): boolean;

  readonly forwardChains = true;
  /**
   * Chains follow their predecessors into a queue without passing through pop: once share groups
   * exist, only within the fair share's bound on queued work and when no group is more behind.
   * Undefined until then, so a runtime without groups makes no call for it.
   */
  admitForward: ((task: SchedTask, worker: WorkerSlot) => boolean) | undefined = undefined;

  attach(ctx: PolicyContext): void {
    this.ctx = ctx;
    this.lane = this.newLane();
  }

  private newLane(): Lane {
    return new Lane(
      this.ctx.workers.length,
      () => this.newBucket(),
      (a, b) => this.before(a, b),
    );
  }

  push(task: SchedTask): void {
    this.count++;
    if (this.fair === null) {
      if (!task.share) {
        this.lane.push(task);
        return;
      }
      const fair = (this.fair = new FairShare(this.ctx, this.lane, () => this.newLane()));
      this.admitForward = (t, w) => fair.admitForward(t, w);
    }
    this.fair.push(task);
  }

  pop(worker: WorkerSlot): SchedTask | undefined {
    const t = this.fair === null ? this.lane.pop(worker.index) : this.fair.pop(worker);
    if (t) this.count--;
    return t;
  }

  pending(): number {
    return this.count;
  }

  onForward(task: SchedTask, worker: WorkerSlot): void {
    if (this.fair !== null) this.fair.forwarded(task, worker);
  }

  onComplete(task: SchedTask, worker: WorkerSlot, durationUs: number): void {
    if (this.fair !== null) this.fair.completed(task, worker, durationUs);
  }
}
