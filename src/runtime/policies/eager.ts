/** eager: first come, first served; any idle worker that can run the oldest ready task takes it. */
import { CentralPolicy } from './central.js';
import type { SchedTask } from './policy.js';
import { Fifo } from './queues.js';

class FifoBucket {
  private readonly q = new Fifo<SchedTask>();
  push(t: SchedTask): void {
    this.q.push(t);
  }
  peek(): SchedTask | undefined {
    return this.q.peek();
  }
  pop(): SchedTask | undefined {
    return this.q.shift();
  }
  get length(): number {
    return this.q.length;
  }
}

export class EagerPolicy extends CentralPolicy {
  readonly name = 'eager';
  protected newBucket(): FifoBucket {
    return new FifoBucket();
  }
  protected before(a: SchedTask, b: SchedTask): boolean {
    return a.seq < b.seq;
  }
}
