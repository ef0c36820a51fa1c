/**
 * Helpers the workloads share for driving the runtime: how many tasks to split a job into, the device
 * constraint to put on them, and waiting for a batch of tasks without leaving any rejection unhandled.
 */
import { TandemError } from '../core/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TaskHandle } from '../runtime/task.js';

export type DeviceChoice = 'auto' | 'cpu' | 'cuda' | 'webgpu';

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

/**
 * Largest task, in the op's cost-model flops, by the kind of device that will run it: ~2-3 ms on a
 * CPU core of the VMs measured (option ~1.9e8, VaR ~5e8 model flops/s per core), ~10 ms on an H200
 * (European option ~1.3e13). A device runs one task at a time and cannot be taken back mid-task, so
 * this bounds how long another tenant's task waits for a device that this job holds.
 */
export const CPU_TASK_FLOPS = 5e5;
export const GPU_TASK_FLOPS = 1e11;
/** Never more tasks than this per job (each holds a tensor and a read-back until the job ends). */
export const MAX_TASKS = 8192;

/**
 * Tasks needed so that none exceeds the device's flops budget: the CPU's when only CPU queues can
 * run the op under the choice (the service's latency jobs), a GPU's otherwise (GPUs take most of an
 * 'auto' job there, and small CPU-sized chunks would add a launch and a read-back each).
 */
export function boundedTaskCount(rt: Runtime, op: string, device: DeviceChoice, totalFlops: number): number {
  const impls = rt.kernels.get(op).impls;
  let gpu = false;
  for (const w of rt.workers) {
    const kind = w.device.info.kind;
    if (kind !== 'cpu' && impls.has(kind) && (device === 'auto' || kind === device)) gpu = true;
  }
  const budget = gpu ? GPU_TASK_FLOPS : CPU_TASK_FLOPS;
  return Math.min(MAX_TASKS, Math.max(1, Math.ceil(totalFlops / budget)));
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
