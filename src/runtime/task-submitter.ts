/**
 * Where the runtime's tasks are made: numbered, given the workers they may run on, and handed to the
 * executor. What they are made from was validated before (submit.ts for a kernel request,
 * sequence-submit.ts for a sequence), and the runtime has checked that it is open.
 */
import type { Scalars } from '../devices/device.js';
import type { AccessMode } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import { placedKernel } from './collectives.js';
import type { DeviceSet } from './device-set.js';
import type { Executor } from './executor.js';
import type { KernelEligibility } from './kernel-eligibility.js';
import type { RegisteredKernel } from './kernel-registry.js';
import { sequenceEligible, type PreparedSequence } from './sequence.js';
import type { ShareGroup } from './shares.js';
import type { SubmitRequest, ValidatedSubmit } from './submit.js';
import { DISTINCT_TENSORS, PREPARED_RUN, Task, type PlacedWork, type TaskKernel } from './task.js';

const NO_SCALARS: Scalars = Object.freeze({});

export class TaskSubmitter {
  /** Set by Runtime.create once the devices are open (the executor's models need their workers). */
  executor!: Executor;
  private nextTaskId = 1;
  private readonly eligibility: KernelEligibility;

  constructor(private readonly devices: DeviceSet) {
    this.eligibility = devices.eligibility;
  }

  /** A kernel request (validated as `v`) charged to `share`. */
  kernel(k: RegisteredKernel, v: ValidatedSubmit, req: SubmitRequest, share: ShareGroup | null): Task {
    const eligibility = this.eligibility;
    const task = new Task(
      this.nextTaskId++,
      req.name ?? k.def.name,
      k,
      v.tensors,
      eligibility.modesOf(k.def, v.scalars),
      v.scalars,
      v.priority,
      v.constraint,
      req.tags,
      share,
    );
    task.cost = v.cost;
    task.eligible = this.devices.anySupports
      ? eligibility.eligibleFor(task, k.impls)
      : eligibility.eligibleOf(k, v.constraint);
    this.executor.submit(task, v.deps);
    return task;
  }

  /** `p` (a request just validated, or a prepared sequence run again) as a task. */
  sequence(
    p: PreparedSequence,
    tags: Readonly<Record<string, string>> | undefined,
    deps: readonly Task[],
    preparedRun: boolean,
  ): Task {
    const seq = p.built;
    const id = this.nextTaskId++;
    // The steps' own launch ids follow the task's (see Launcher.launchSequence in launch.ts).
    this.nextTaskId += seq.calls.length;
    const task = new Task(
      id,
      p.name,
      seq.kernel,
      seq.tensors,
      seq.modes,
      NO_SCALARS,
      p.priority,
      p.constraint,
      tags,
      p.share,
    );
    task.cost = seq.cost;
    task.flags |= preparedRun ? DISTINCT_TENSORS | PREPARED_RUN : DISTINCT_TENSORS;
    task.eligible = sequenceEligible(seq, p.constraint, this.devices.workers, this.devices.lost);
    this.executor.submit(task, deps);
    return task;
  }

  /** A task over several memory nodes (collectives.ts), ordered by its tensors' accesses. */
  placed(name: string, tensors: readonly Tensor[], modes: readonly AccessMode[], work: PlacedWork): Task {
    const task = new Task(
      this.nextTaskId++,
      name,
      placedKernel,
      tensors,
      modes,
      NO_SCALARS,
      0,
      null,
      undefined,
    );
    task.placed = work;
    this.executor.submit(task, []);
    return task;
  }

  /** A host access to `t` (host-access.ts): `fn` runs on the main thread when the data is there. */
  host(kernel: TaskKernel, t: Tensor, fn: (task: Task) => void): Task {
    const def = kernel.def;
    const task = new Task(
      this.nextTaskId++,
      def.name,
      kernel,
      [t],
      this.eligibility.modesOf(def, NO_SCALARS),
      NO_SCALARS,
      0,
      null,
      undefined,
    );
    task.hostFn = fn;
    this.executor.submit(task, []);
    return task;
  }
}
