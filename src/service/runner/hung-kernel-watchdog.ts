/**
 * The watchdog for kernels that do not end. A job past its deadline is asked to stop (its signal) and
 * stops at its next task boundary; a GPU kernel with an infinite loop never reaches one, and a CUDA
 * kernel cannot be killed in-process: only the end of the process makes the driver tear its context down.
 * So when the dispatcher finds a job still running `deadlineGraceMs` after its deadline (onOverdue), this
 * looks at the job's tasks in flight (from runtime task events, by the job tag): if one is on a GPU,
 * the job fails with TANDEM_ERR_DEADLINE_EXCEEDED and a note, its tenant is charged the kernel's device
 * time, and the device is declared lost for this process (`Runtime.declareDeviceLost`). From there the
 * existing device-loss path takes over (device-loss.ts): supervised, the service drains and is relaunched
 * (exit 75), the other running jobs are re-queued by the next process; unsupervised, placement skips the
 * device. Because the hung kernel would make a close wait forever (a CUDA context sync), the service does
 * not close the runtime after a hang (`anyHung`); the process exit releases it.
 *
 * A WGSL dispatch on Dawn that does not end is left to the OS's GPU watchdog (TDR on Windows; on Linux
 * Vulkan drivers may or may not reset): when the driver resets, Dawn reports the device lost and the
 * WebGPU backend's fault path runs; when it does not, this watchdog gives the device up the same way.
 */
import type { Observer, TaskEvent } from '../../obs/observer.js';
import { nowUs } from '../../obs/observer.js';
import type { JobRecord } from '../store/job-store.js';
import type { OverdueVerdict } from './dispatcher-deps.js';

interface InFlight {
  readonly deviceId: string;
  readonly startUs: number;
}

export interface WatchdogDeps {
  /** The kind ('cpu', 'cuda', 'webgpu') of a device id, undefined if unknown. */
  readonly deviceKind: (deviceId: string) => string | undefined;
  /** Gives the device up for this process (false: no such device, or already lost). */
  readonly declareLost: (deviceId: string, reason: string) => boolean;
  /** Adds device seconds to a tenant's account. */
  readonly charge: (tenantId: string, deviceId: string, seconds: number) => void;
}

export class HungKernelWatchdog implements Observer {
  /** Tasks started and not yet ended, by job id → task id. */
  private readonly inFlight = new Map<string, Map<number, InFlight>>();
  private readonly hung = new Set<string>();

  constructor(private readonly d: WatchdogDeps) {}

  /** Devices given up because a kernel did not end (the service must not wait on them at close). */
  get anyHung(): boolean {
    return this.hung.size > 0;
  }

  onTaskStart(e: TaskEvent): void {
    const job = e.tags?.['job'];
    if (!job) return;
    let tasks = this.inFlight.get(job);
    if (!tasks) this.inFlight.set(job, (tasks = new Map()));
    tasks.set(e.taskId, { deviceId: e.deviceId, startUs: e.startUs || nowUs() });
  }

  onTaskEnd(e: TaskEvent): void {
    const job = e.tags?.['job'];
    if (!job) return;
    const tasks = this.inFlight.get(job);
    // Absent: the task was charged when its device was given up (or started before this observer).
    if (!tasks?.delete(e.taskId)) return;
    if (tasks.size === 0) this.inFlight.delete(job);
    const tenant = e.tags?.['tenant'];
    if (tenant) this.d.charge(tenant, e.deviceId, Math.max(0, e.endUs - e.startUs) / 1e6);
  }

  /**
   * The dispatcher's onOverdue: a verdict when the job has a task still running on a GPU (its device is
   * given up once the failure is committed), null when it has none (the dispatcher frees its slot).
   */
  overdue(job: JobRecord): OverdueVerdict | null {
    const tasks = this.inFlight.get(job.id);
    if (!tasks) return null;
    const now = nowUs();
    const onGpu = [...tasks.entries()].filter(([, t]) => {
      const kind = this.d.deviceKind(t.deviceId);
      return kind !== undefined && kind !== 'cpu';
    });
    if (onGpu.length === 0) return null;
    const devices = [...new Set(onGpu.map(([, t]) => t.deviceId))];
    const deviceSeconds = onGpu.reduce((s, [, t]) => s + Math.max(0, now - t.startUs) / 1e6, 0);
    const list = devices.join(', ');
    const note =
      `its kernel on ${list} was still running after the deadline and its grace: ${list} was given up for this ` +
      `process (a GPU kernel cannot be stopped in it) and the service relaunched; ${deviceSeconds.toFixed(1)} device ` +
      `seconds were charged to the tenant`;
    return {
      note,
      details: { hungDevices: devices, deviceSeconds },
      after: () => {
        for (const [taskId, t] of onGpu) {
          tasks.delete(taskId);
          this.d.charge(job.tenantId, t.deviceId, Math.max(0, now - t.startUs) / 1e6);
        }
        if (tasks.size === 0) this.inFlight.delete(job.id);
        for (const id of devices) {
          this.hung.add(id);
          this.d.declareLost(id, `a kernel of job ${job.id} did not end by its deadline (hung)`);
        }
      },
    };
  }
}
