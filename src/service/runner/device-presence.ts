/**
 * A job that asks for a device (a kind like 'cuda' or an id like 'cuda0') this server does not have is
 * refused at submit, with the reason `tandem devices` shows for that backend — rather than accepted,
 * queued and failed later. While the runtime is still opening, nobody knows yet: the job is accepted
 * and placement decides when it starts.
 */
import { TandemError } from '../../core/errors.js';
import { HARDWARE_KINDS, isHardwareKind } from '../../devices/device.js';
import { describeBackend } from '../../runtime/backends.js';
import type { RuntimeStatus, ServiceRuntimeHost } from '../parts.js';

export function assertDevicePresent(
  requested: string | undefined,
  status: RuntimeStatus,
  rt: ServiceRuntimeHost | null,
  count = 1,
): void {
  if (requested === undefined || status.state === 'opening') return;
  if (!rt)
    throw new TandemError(
      'TANDEM_ERR_DEVICE_ABSENT',
      `the job asks for device ${JSON.stringify(requested)} but this server has no devices: ${status.reason ?? 'no runtime'}`,
      { requested },
    );
  const devices = rt.devices.map((d) => d.info);
  const matching = devices.filter((d) => d.id === requested || d.kind === requested);
  if (matching.length >= count && matching.length > 0) return;
  if (matching.length > 0)
    throw new TandemError(
      'TANDEM_ERR_DEVICE_ABSENT',
      `the job asks for ${count} ${requested} devices; this server has ${matching.length} (${matching.map((d) => d.id).join(', ')})`,
      { requested, count, devices: devices.map((d) => d.id) },
    );
  const present = devices.map((d) => d.id).join(', ') || 'none';
  const details = {
    requested,
    devices: devices.map((d) => d.id),
    backends: rt.backends.map((b) => ({ kind: b.kind, available: b.available, reason: b.reason ?? null })),
  };
  const kind = isHardwareKind(requested) ? requested : HARDWARE_KINDS.find((k) => requested.startsWith(k));
  const backend = kind ? rt.backends.find((b) => b.kind === kind) : undefined;
  const why = !kind
    ? `${JSON.stringify(requested)} is neither a device kind (${HARDWARE_KINDS.join(', ')}) nor a device here`
    : backend
      ? describeBackend(backend)
      : `${kind}: not opened by this server (TANDEM_BACKENDS)`;
  throw new TandemError(
    'TANDEM_ERR_DEVICE_ABSENT',
    `no device ${JSON.stringify(requested)} on this server (${why}); devices: ${present}`,
    details,
  );
}
