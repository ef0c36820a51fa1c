/**
 * A model's placement rule applied per batch: the device kinds it may run on, in order, and with
 * `preferIdle` the first of them that no job is using (serve on the CPU while the GPUs train). Which
 * devices jobs use is learned from the runtime's task events: a task tagged with a job id marks its
 * device busy while it runs and for a short while after (the gap between a training step's kernels).
 */
import { TandemError } from '../../core/errors.js';
import type { HardwareKind } from '../../devices/device.js';
import type { Observer, TaskEvent } from '../../obs/observer.js';
import type { ServiceRuntime } from '../jobs/job-type.js';
import type { ModelPlacement } from './model.js';

/** A device stays "busy with jobs" this long after a job's task on it ended. */
const BUSY_LINGER_MS = 250;

export class JobDeviceUse implements Observer {
  private readonly inflight = new Map<string, number>();
  private readonly lastEnd = new Map<string, number>();

  onTaskStart(e: TaskEvent): void {
    if (e.tags?.['job'] === undefined) return;
    this.inflight.set(e.deviceId, (this.inflight.get(e.deviceId) ?? 0) + 1);
  }

  onTaskEnd(e: TaskEvent): void {
    if (e.tags?.['job'] === undefined) return;
    this.inflight.set(e.deviceId, Math.max(0, (this.inflight.get(e.deviceId) ?? 0) - 1));
    this.lastEnd.set(e.deviceId, performance.now());
  }

  /** True while a job's task runs on the device or ended within the last BUSY_LINGER_MS. */
  busy(deviceId: string): boolean {
    if ((this.inflight.get(deviceId) ?? 0) > 0) return true;
    const last = this.lastEnd.get(deviceId);
    return last !== undefined && performance.now() - last < BUSY_LINGER_MS;
  }
}

/**
 * The device kind a batch goes to (rt.submit's `device`): the first listed kind present, or with
 * preferIdle the first present kind with a device no job is using (else the first present). Undefined
 * when none of the kinds is present (see `requirePlacement`).
 */
export function placeBatch(
  rule: ModelPlacement,
  rt: ServiceRuntime,
  use: JobDeviceUse | null,
): HardwareKind | undefined {
  let first: HardwareKind | undefined;
  for (const kind of rule.kinds) {
    let present = false;
    let idle = false;
    for (const d of rt.devices)
      if (d.info.kind === kind) {
        present = true;
        if (use === null || !use.busy(d.info.id)) idle = true;
      }
    if (!present) continue;
    if (!rule.preferIdle) return kind;
    first ??= kind;
    if (idle) return kind;
  }
  return first;
}

/**
 * `placeBatch`, or TANDEM_ERR_DEVICE_ABSENT naming the kinds the server has when none of the rule's is
 * present: a rule says which kinds may serve the model, so a CUDA-only model is refused on a server
 * without CUDA rather than served on its CPU (no silent fallback).
 */
export function requirePlacement(
  rule: ModelPlacement,
  rt: ServiceRuntime,
  use: JobDeviceUse | null,
): HardwareKind {
  const kind = placeBatch(rule, rt, use);
  if (kind !== undefined) return kind;
  const present = [...new Set(rt.devices.map((d) => d.info.kind))];
  throw new TandemError(
    'TANDEM_ERR_DEVICE_ABSENT',
    `the model's placement allows ${rule.kinds.join(', ')}; this server has ${present.join(', ') || 'no device'}`,
    { kinds: [...rule.kinds], present },
  );
}

/**
 * Where a batch on `device` sends the kernels that device cannot run (an ONNX model on WebGPU: the nodes
 * without WGSL, image_normalize): the rule's other kinds that are present, in the rule's order, so a
 * model never runs outside its placement; none leaves the run strict (TANDEM_ERR_UNSUPPORTED).
 */
export function fallbackKinds(
  device: string | undefined,
  rule: ModelPlacement,
  rt: Pick<ServiceRuntime, 'devices'>,
): string[] {
  const kind = rt.devices.find((d) => d.info.kind === device || d.info.id === device)?.info.kind;
  const present = new Set<string>(rt.devices.map((d) => d.info.kind));
  return rule.kinds.filter((k) => k !== kind && present.has(k));
}
