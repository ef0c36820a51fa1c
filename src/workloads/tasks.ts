/**
 * Helpers the workloads share for driving the runtime: how many tasks to split a job into, the device
 * constraint to put on them, and waiting for a batch of tasks without leaving any rejection unhandled.
 */
import { TandemError } from '../core/errors.js';
import { HARDWARE_KINDS, type HardwareKind } from '../devices/device.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TaskHandle } from '../runtime/task.js';

/** 'auto' or one of the hardware kinds (devices/device.ts). */
export type DeviceChoice = 'auto' | HardwareKind;
export const DEVICE_CHOICES: readonly DeviceChoice[] = ['auto', ...HARDWARE_KINDS];

/** Queues (workers) that could run `op` under the choice; 'auto' counts every kind with an implementation. */
export function eligibleQueues(rt: Runtime, op: string, device: DeviceChoice): number {
  const impls = rt.kernels.get(op).impls;
  let n = 0; // counted in place: this runs once per price or VaR request
  for (const w of rt.workers) {
    if (impls.has(w.device.info.kind) && (device === 'auto' || w.device.info.kind === device)) n++;
  }
  return n;
}

/**
 * How many tasks keep the eligible hardware busy: one per CPU worker (each runs one task at a time),
 * one per GPU (a single launch already fills it; more tasks would only add launches and read-backs).
 */
export function parallelSlots(rt: Runtime, op: string, device: DeviceChoice): number {
  const impls = rt.kernels.get(op).impls;
  const ok = (kind: string): boolean => impls.has(kind) && (device === 'auto' || kind === device);
  let slots = 0;
  const ws = rt.workers;
  // Devices counted in place (an earlier eligible worker of the same device id means "seen"): no set
  // per price, and a host has only a handful of workers.
  for (let i = 0; i < ws.length; i++) {
    const info = ws[i]!.device.info;
    if (!ok(info.kind)) continue;
    if (info.kind === 'cpu') {
      slots++;
      continue;
    }
    let seen = false;
    for (let j = 0; j < i && !seen; j++) {
      const o = ws[j]!.device.info;
      seen = o.id === info.id && ok(o.kind);
    }
    if (!seen) slots++;
  }
  return slots;
}

export function requireDevice(rt: Runtime, op: string, device: DeviceChoice): number {
  const n = eligibleQueues(rt, op, device);
  if (n === 0) {
    const open = rt.devices.map((d) => d.info.id).join(', ') || 'none';
    throw new TandemError(
      'TANDEM_ERR_NO_DEVICE',
      `no ${device === 'auto' ? '' : `${device} `}device can run ${op} (open devices: ${open})`,
      {
        op,
        device,
      },
    );
  }
  return n;
}

export function constraint(device: DeviceChoice): { device?: string } {
  return device === 'auto' ? {} : { device };
}

/** Waits for all tasks; if any failed, throws the first error after every task has settled. */
export async function settleAll(tasks: readonly TaskHandle[]): Promise<void> {
  const results = await Promise.allSettled(tasks.map((t) => t.done));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** How many tasks ran where: { cpu0: 2, cuda0: 1 }. */
export function placement(tasks: readonly TaskHandle[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of tasks) {
    const id = t.deviceId ?? 'unknown';
    out[id] = (out[id] ?? 0) + 1;
  }
  return out;
}

/** How a long workload run is stopped: its AbortSignal (a job's cancel or deadline). */
export interface RunOptions {
  /** When it fires the run stops at its next task or step boundary, drains what is in flight, throws. */
  readonly signal?: AbortSignal | undefined;
  /** Labels put on every task (the service's job and tenant: its trace, metrics and watchdog find them). */
  readonly tags?: Readonly<Record<string, string>> | undefined;
  /**
   * Progress: called as each unit of the run completes (`done` of `total`; MD counts steps, the Monte
   * Carlo workloads their tasks). The service turns it into the job's progress.
   */
  readonly onProgress?: ((done: number, total: number, unit: 'step' | 'task') => void) | undefined;
}

/** The abort's reason when it is a TandemError (a deadline), else TANDEM_ERR_CANCELLED. */
export function abortError(signal: AbortSignal): TandemError {
  const r: unknown = signal.reason;
  return r instanceof TandemError ? r : new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while running');
}

/** One task of a windowed run: its handle, what the host waits for, and what to free after. */
export interface WindowTask<T> {
  readonly handle: TaskHandle;
  readonly result: Promise<T>;
  readonly release: () => void;
}

/**
 * Runs `count` tasks with at most `window` in flight: task i is made by `submit(i)` only once task
 * i - window has been consumed by `take` (in order). So a job of millions of tasks never queues them all
 * at once: a cancel (the signal, checked before every submit) takes effect after the tasks in flight,
 * and memory stays bounded. On abort or failure it stops submitting, waits for every task in flight (a
 * task on a device cannot be pulled back, and its tensors must not be freed under it), frees, throws.
 * Returns how many tasks ran on which device.
 */
export async function runWindowed<T>(
  count: number,
  window: number,
  signal: AbortSignal | undefined,
  submit: (i: number) => WindowTask<T>,
  take: (i: number, value: T) => void,
): Promise<Record<string, number>> {
  const inFlight: WindowTask<T>[] = [];
  const devices: Record<string, number> = {};
  let next = 0;
  try {
    for (let done = 0; done < count; done++) {
      while (next < count && inFlight.length < window) {
        if (signal?.aborted) throw abortError(signal);
        inFlight.push(submit(next++));
      }
      const t = inFlight.shift()!;
      let value: T;
      try {
        value = await t.result;
      } finally {
        t.release();
      }
      const id = t.handle.deviceId ?? 'unknown';
      devices[id] = (devices[id] ?? 0) + 1;
      take(done, value);
    }
    return devices;
  } finally {
    if (inFlight.length > 0) {
      // Results of tasks no longer wanted: mark handled, wait for each task, then free its tensors.
      for (const t of inFlight) t.result.catch(() => undefined);
      await Promise.allSettled(inFlight.map((t) => t.handle.done));
      for (const t of inFlight) t.release();
    }
  }
}

/** Whether a GPU (any kind but the CPU) may run `op` under the choice. */
export function gpuEligible(rt: Runtime, op: string, device: DeviceChoice): boolean {
  const impls = rt.kernels.get(op).impls;
  return rt.workers.some((w) => {
    const kind = w.device.info.kind;
    return kind !== 'cpu' && impls.has(kind) && (device === 'auto' || kind === device);
  });
}
