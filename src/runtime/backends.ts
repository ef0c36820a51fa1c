/**
 * The built-in backends, loaded on demand so that a missing native library only makes its own
 * backend unavailable (with the reason) and never stops the others.
 */
import { HARDWARE_KINDS, type Backend, type BackendStatus, type HardwareKind } from '../devices/device.js';

async function load(path: string, name: string): Promise<Backend> {
  const mod = (await import(path)) as Record<string, Backend | undefined>;
  const b = mod[name];
  if (!b) throw new Error(`${path} does not export ${name}`);
  return b;
}

export const BUILTIN_BACKENDS: Readonly<Record<HardwareKind, () => Promise<Backend>>> = {
  cpu: () => load('../devices/cpu/backend.js', 'cpuBackend'),
  cuda: () => load('../devices/cuda/backend.js', 'cudaBackend'),
  webgpu: () => load('../devices/webgpu/backend.js', 'webgpuBackend'),
};

export const DEFAULT_BACKENDS: readonly HardwareKind[] = HARDWARE_KINDS;

/**
 * One line for a backend after opening, as the CLI and the service print it: its devices, or why it
 * is unavailable (the same reason `tandem devices` shows).
 */
export function describeBackend(b: BackendStatus): string {
  if (!b.available) return `${b.kind}: unavailable: ${b.reason ?? 'no reason given'}`;
  if (b.devices.length === 0) return `${b.kind}: no device`;
  return `${b.kind}: ${b.devices.map((d) => `${d.info.id} ${d.info.name}`).join(', ')}`;
}
