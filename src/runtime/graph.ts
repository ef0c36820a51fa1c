/**
 * Dependencies from the order of data accesses: read-after-write, write-after-read and
 * write-after-write, plus explicit ones. A tensor remembers its last writer and the readers since.
 */
import type { AccessMode } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import type { Task } from './task.js';

export function readsFrom(mode: AccessMode): boolean {
  return mode !== 'w';
}

export function writesTo(mode: AccessMode): boolean {
  return mode !== 'r';
}

/**
 * Records `task`'s accesses and returns its predecessors (unique, unfinished ones and failed ones;
 * the caller decides what a failed predecessor means).
 */
export function collectPredecessors(task: Task, explicit: readonly Task[]): Task[] {
  const preds: Task[] = [];
  const add = (t: Task | null): void => {
    if (!t || t === task || t.state === 'done' || preds.includes(t)) return;
    preds.push(t);
  };
  for (const d of explicit) add(d);
  const seen: Tensor[] = [];
  for (let i = 0; i < task.tensors.length; i++) {
    const t = task.tensors[i]!;
    let mode = task.modes[i]!;
    // The same tensor passed twice: the union of its modes counts.
    const j = seen.indexOf(t);
    if (j >= 0) continue;
    for (let k = i + 1; k < task.tensors.length; k++) {
      if (task.tensors[k] === t && task.modes[k] !== mode) mode = 'rw';
    }
    seen.push(t);
    add(t.lastWriter as Task | null);
    if (writesTo(mode)) {
      for (const r of t.readers) add(r as Task);
      t.lastWriter = task;
      t.readers = [];
    } else {
      if (t.readers.length >= 64) t.readers = t.readers.filter((r) => !r.isFinished());
      t.readers.push(task);
    }
  }
  return preds;
}
