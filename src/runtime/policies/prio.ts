/** prio: highest priority first, submission order among equals. */
import { CentralPolicy } from './central.js';
import type { SchedTask } from './policy.js';
import { Heap } from './queues.js';

export function higherPriorityFirst(a: SchedTask, b: SchedTask): boolean {
  return a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq);
}

export class PrioPolicy extends CentralPolicy {
  readonly name = 'prio';
  protected newBucket(): Heap<SchedTask> {
    return new Heap<SchedTask>(higherPriorityFirst);
  }
  protected before(a: SchedTask, b: SchedTask): boolean {
    return higherPriorityFirst(a, b);
  }
}
