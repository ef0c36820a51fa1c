/**
 * Dependencies from the order of data accesses: read-after-write, write-after-read and
 * write-after-write, plus explicit ones. A tensor remembers its last writer and the readers since.
 */
import type { AccessMode } from '../kernels/kernel.js';
import { DISTINCT_TENSORS, type Task } from './task.js';

export function readsFrom(mode: AccessMode): boolean {
  return mode !== 'w';
}

export function writesTo(mode: AccessMode): boolean {
  return mode !== 'r';
}

/** Receives a task's predecessors one by one (the executor links them; no list is built). */
export interface PredecessorSink {
  /** `pred` may repeat and may be finished or the task itself: the sink filters. */
  addPredecessor(task: Task, pred: Task): void;
}

/**
 * Records `task`'s accesses on its tensors and hands its predecessors to `sink`: the explicit ones,
 * then each tensor's last writer and, for a write, the readers since. Allocates nothing per call
 * beyond a tensor's new reader list.
 */
export function collectPredecessors(task: Task, explicit: readonly Task[], sink: PredecessorSink): void {
  for (let i = 0; i < explicit.length; i++) sink.addPredecessor(task, explicit[i]!);
  const tensors = task.tensors;
  const known = (task.flags & DISTINCT_TENSORS) !== 0;
  const firsts = known ? null : firstOccurrences(tensors);
  // Tasks whose tensors are all distinct (sequences, or a large task found so) skip the scans below.
  const distinct = known || (firsts !== null && !firsts.repeats);
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i]!;
    // The same tensor passed twice: the union of its modes counts, recorded once.
    if (!known && (firsts === null ? tensors.indexOf(t) < i : !firsts.first[i])) continue;
    let mode = task.modes[i]!;
    if (!distinct)
      for (let k = i + 1; k < tensors.length; k++) {
        if (tensors[k] === t && task.modes[k] !== mode) mode = 'rw';
      }
    if (t.lastWriter) sink.addPredecessor(task, t.lastWriter as Task);
    if (writesTo(mode)) {
      for (const r of t.readers) sink.addPredecessor(task, r as Task);
      t.lastWriter = task;
      // A fresh tensor's first writer keeps its (empty) list rather than making another.
      if (t.readers.length > 0) t.readers = [];
    } else {
      if (t.readers.length >= 64) t.readers = t.readers.filter((r) => !r.isFinished());
      t.readers.push(task);
    }
  }
}

/** Above this many tensors a task's duplicate check uses a set instead of a scan per tensor. */
const SCAN_MAX = 16;

/**
 * For tasks with many tensors (a sequence of kernels carries all of theirs), which entries are the
 * first occurrence of their tensor; null for small tasks, where `indexOf` is cheaper than a set.
 */
export function firstOccurrences(
  tensors: readonly object[],
): { readonly first: readonly boolean[]; readonly repeats: boolean } | null {
  if (tensors.length <= SCAN_MAX) return null;
  const seen = new Set<object>();
  const first = new Array<boolean>(tensors.length);
  let repeats = false;
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i]!;
    first[i] = !seen.has(t);
    if (!first[i]) repeats = true;
    seen.add(t);
  }
  return { first, repeats };
}
