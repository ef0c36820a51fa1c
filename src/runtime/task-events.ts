/** Task events for observers (onTaskStart, onTaskEnd); the executor builds them only while observed. */
import type { TandemError } from '../core/errors.js';
import type { Observer, TaskEvent } from '../obs/observer.js';
import type { Task } from './task.js';

export function emitTaskStart(observers: readonly Observer[], task: Task): void {
  const e = taskEvent(task, null);
  for (const o of observers) o.onTaskStart?.(e);
}

export function emitTaskEnd(observers: readonly Observer[], task: Task, error: TandemError | null): void {
  const e = taskEvent(task, error);
  for (const o of observers) o.onTaskEnd?.(e);
}

function taskEvent(task: Task, error: TandemError | null): TaskEvent {
  const w = task.worker;
  const tt = task.times;
  const startUs = tt?.startUs ?? 0;
  return {
    taskId: task.id,
    name: task.name,
    op: task.op,
    deviceId: w ? w.device.info.id : (task.placed?.deviceId ?? 'host'),
    queueId: w ? w.queue.id : (task.placed?.queueId ?? 'host'),
    // A task submitted before its observer came has no submission or ready time: its start stands in.
    submitUs: tt?.submitUs || tt?.readyUs || startUs,
    readyUs: tt?.readyUs || startUs,
    startUs,
    endUs: tt?.endUs ?? 0,
    ok: !error,
    ...(error ? { errorCode: error.code } : {}),
    ...(task.placement ? { placement: task.placement } : {}),
    flops: task.cost?.flops ?? 0,
    bytes: task.cost?.bytes ?? 0,
    ...(task.tags ? { tags: task.tags } : {}),
  };
}
