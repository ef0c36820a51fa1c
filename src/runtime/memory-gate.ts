/** Admission of a task by memory on its worker's node (the executor's `memoryGate`). */
import type { LruEvictor } from '../memory/evictor.js';
import type { MemoryManager } from '../memory/memory-manager.js';
import { firstOccurrences } from './graph.js';
import type { WorkerSlot } from './policies/policy.js';
import { DISTINCT_TENSORS, type Task } from './task.js';

/** What the gate reads of the runtime (structural: no import of runtime.ts). */
export interface MemoryGateHost {
  readonly memory: MemoryManager;
  readonly evictor: LruEvictor;
  readonly workers: readonly WorkerSlot[];
}

/**
 * Room for a task's data on its worker's node: evict (clean copies now, dirty ones written back)
 * and, when write-backs or tasks on that node will free more, make it wait rather than fail.
 */
export function memoryGate(rt: MemoryGateHost, task: Task, w: WorkerSlot): 'ok' | 'wait' {
  const node = w.node;
  let need = 0;
  const firsts = task.flags & DISTINCT_TENSORS ? null : firstOccurrences(task.tensors);
  for (let i = 0; i < task.tensors.length; i++) {
    const t = task.tensors[i]!;
    const first =
      task.flags & DISTINCT_TENSORS || (firsts === null ? task.tensors.indexOf(t) === i : firsts.first[i]);
    if (first && !t.replicas[node.index]?.buffer) need += t.bytes;
  }
  if (need === 0) return 'ok';
  const room = (): number => rt.memory.budgetBytes(node) - rt.memory.usedBytes(node);
  if (need <= room()) return 'ok';
  rt.evictor.evict(node, need - room());
  if (need <= room()) return 'ok';
  const busy = rt.workers.some((x) => x.node === node && x.inflight > 0);
  return rt.evictor.inFlight > 0 || busy ? 'wait' : 'ok';
}
