/**
 * Tasks that no worker queue runs: host accesses (`rt.read`, `rt.write`: a function on the main thread
 * once the data is in host memory) and placed tasks (collectives over several devices, run on their
 * own streams). Their data is made ready as for a kernel; completion goes back to the executor.
 */
import { asTandemError, type TandemError } from '../core/errors.js';
import type { DeviceBuffer } from '../devices/device.js';
import type { Coherence } from '../memory/coherence.js';
import type { Observer } from '../obs/observer.js';
import { nowUs } from '../obs/observer.js';
import { readsFrom, writesTo } from './graph.js';
import { emitTaskStart } from './task-events.js';
import type { Task } from './task.js';

/** What direct dispatch needs of the executor (structural: no import of executor.ts). */
export interface DirectDispatchHost {
  readonly coherence: Coherence;
  readonly observers: readonly Observer[];
  complete(task: Task, error: TandemError | null): void;
}

export function dispatchHost(ex: DirectDispatchHost, task: Task): void {
  task.state = 'dispatched';
  let waiting = 1;
  let failed: Error | null = null;
  const coherence = ex.coherence;
  const host = coherence.host;
  const arrived = (err: Error | null): void => {
    if (err && !failed) failed = err;
    if (--waiting > 0) return;
    if (failed)
      return ex.complete(task, asTandemError(failed, 'TANDEM_ERR_INTERNAL', `host access ${task.name}`));
    try {
      task.timed().startUs = nowUs();
      task.hostFn!(task);
      ex.complete(task, null);
    } catch (e) {
      ex.complete(task, asTandemError(e, 'TANDEM_ERR_INTERNAL', `host access ${task.name}`));
    }
  };
  try {
    for (let i = 0; i < task.tensors.length; i++) {
      const t = task.tensors[i]!;
      if (readsFrom(task.modes[i]!)) {
        waiting++;
        coherence.acquireRead(t, host, arrived);
      } else coherence.acquireWrite(t, host);
    }
    for (let i = 0; i < task.tensors.length; i++) {
      if (writesTo(task.modes[i]!)) coherence.commitWrite(task.tensors[i]!, host);
    }
  } catch (e) {
    failed ??= e as Error;
  }
  arrived(null);
}

/**
 * A task over several devices (a collective): each tensor made valid or writable on its own node and
 * pinned there, as for a kernel, then the work runs on its own streams; completion is its callback.
 */
export function dispatchPlaced(ex: DirectDispatchHost, task: Task): void {
  task.state = 'dispatched';
  const work = task.placed!;
  const coherence = ex.coherence;
  const buffers: DeviceBuffer[] = [];
  let waiting = 1;
  let failed: Error | null = null;
  const tensors = task.tensors;
  for (let i = 0; i < tensors.length; i++) tensors[i]!.replica(work.nodes[i]!.index).users++;
  const finish = (err: TandemError | null): void => {
    for (let i = 0; i < tensors.length; i++) tensors[i]!.replica(work.nodes[i]!.index).users--;
    ex.complete(task, err);
  };
  const arrived = (err: Error | null): void => {
    if (err && !failed) failed = err;
    if (--waiting > 0) return;
    if (failed)
      return finish(asTandemError(failed, 'TANDEM_ERR_INTERNAL', `preparing data for ${task.name}`));
    task.timed().startUs = nowUs();
    if (ex.observers.length) emitTaskStart(ex.observers, task);
    try {
      work.run(buffers, (e) => finish(e ? asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', task.name) : null));
    } catch (e) {
      finish(asTandemError(e, 'TANDEM_ERR_KERNEL_FAILED', task.name));
    }
  };
  try {
    for (let i = 0; i < tensors.length; i++) {
      const t = tensors[i]!;
      const node = work.nodes[i]!;
      if (readsFrom(task.modes[i]!)) {
        waiting++;
        coherence.acquireRead(t, node, arrived);
      } else coherence.acquireWrite(t, node);
      buffers.push(coherence.bufferOn(t, node));
    }
    for (let i = 0; i < tensors.length; i++)
      if (writesTo(task.modes[i]!)) coherence.commitWrite(tensors[i]!, work.nodes[i]!);
  } catch (e) {
    failed ??= e as Error;
  }
  arrived(null);
}
