/**
 * Hardware selection: the operator's rules map a job class to a device class, turned here into the
 * `device` argument of rt.submit. A non-strict rule is a preference (when no such device exists the
 * runtime's scheduler chooses); a strict rule fails the job instead. A device named by the job wins.
 */
import { TandemError } from '../../core/errors.js';
import type { HardwareRule } from '../config.js';
import type { Placement } from '../jobs/job-type.js';

export interface DeviceView {
  readonly id: string;
  readonly kind: string;
  readonly memoryBytes: number;
  readonly peakFlops: Readonly<Record<string, number | undefined>>;
  /** A software rasterizer posing as a GPU (llvmpipe): never what a GPU rule means. */
  readonly software?: boolean;
}

const isGpu = (d: DeviceView): boolean => (d.kind === 'cuda' || d.kind === 'webgpu') && !d.software;
const flops32 = (d: DeviceView): number => d.peakFlops['f32'] ?? 0;

function pickDevice(deviceClass: string, devices: readonly DeviceView[]): string | undefined {
  const gpus = devices.filter(isGpu);
  const bySize = (a: DeviceView, b: DeviceView): number =>
    a.memoryBytes - b.memoryBytes || flops32(a) - flops32(b);
  switch (deviceClass) {
    case 'any':
      return undefined;
    case 'largest-gpu':
      return gpus.length ? [...gpus].sort(bySize).at(-1)!.id : undefined;
    case 'smallest-gpu':
      return gpus.length ? [...gpus].sort(bySize)[0]!.id : undefined;
    case 'gpu':
      // A kind constraint keeps every GPU of that kind available to the scheduler.
      return gpus.some((d) => d.kind === 'cuda') ? 'cuda' : gpus.length ? 'webgpu' : undefined;
    default:
      return devices.some((d) => d.kind === deviceClass || d.id === deviceClass) ? deviceClass : undefined;
  }
}

export function selectPlacement(
  rules: readonly HardwareRule[],
  jobClass: string,
  requested: string | undefined,
  devices: readonly DeviceView[],
): Placement {
  if (requested) return { device: requested, reason: `device ${requested} requested by the job` };
  const rule = rules.find((r) => r.jobClass === jobClass) ?? rules.find((r) => r.jobClass === '*');
  if (!rule) return { device: undefined, reason: `no rule for class ${jobClass}: the scheduler chooses` };
  const device = pickDevice(rule.deviceClass, devices);
  if (device !== undefined) return { device, reason: `rule ${jobClass} → ${rule.deviceClass}: ${device}` };
  if (rule.strict && rule.deviceClass !== 'any')
    throw new TandemError(
      'TANDEM_ERR_NO_DEVICE',
      `rule ${jobClass} → ${rule.deviceClass}: no such device here`,
      {
        jobClass,
        deviceClass: rule.deviceClass,
      },
    );
  return {
    device: undefined,
    reason: `rule ${jobClass} → ${rule.deviceClass}${rule.deviceClass === 'any' ? '' : ' (none here)'}: the scheduler chooses`,
  };
}
