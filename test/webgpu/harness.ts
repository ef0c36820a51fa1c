/**
 * Opens the WebGPU backend once per test file and runs ops through it the way the runtime does:
 * host buffers (SharedArrayBuffers) -> copy route -> queue launch -> copy route back. When no adapter
 * exists the reason is printed and the suites skip.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HostArray } from '../../src/core/dtype.js';
import { hostView } from '../../src/core/dtype.js';
import type {
  BackendStatus,
  CopyRoute,
  DeviceBuffer,
  LaunchArg,
  Scalars,
  TensorDesc,
} from '../../src/devices/device.js';
import { WebGpuBackend } from '../../src/devices/webgpu/backend.js';
import type { WebGpuDevice } from '../../src/devices/webgpu/webgpu-device.js';
import { HostNode } from '../../src/memory/host-node.js';

export interface Opened {
  readonly device: WebGpuDevice;
  readonly status: BackendStatus;
  readonly host: HostNode;
  readonly h2d: CopyRoute;
  readonly d2h: CopyRoute;
}

export type OpenResult = { ok: true; opened: Opened } | { ok: false; reason: string };

export async function openWebGpu(options: Record<string, unknown> = {}): Promise<OpenResult> {
  const host = new HostNode();
  const status = await new WebGpuBackend().open({
    cacheDir: join(tmpdir(), 'tandem-webgpu-test'),
    hostNode: host,
    calibrate: false,
    options: { webgpu: options },
    log: () => undefined,
  });
  if (!status.available) return { ok: false, reason: status.reason ?? 'unavailable' };
  const device = status.devices[0] as WebGpuDevice;
  const h2d = status.copies.find((c) => c.from === 'host' && c.to === 'webgpu')!;
  const d2h = status.copies.find((c) => c.from === 'webgpu' && c.to === 'host')!;
  return { ok: true, opened: { device, status, host, h2d, d2h } };
}

export function copyAsync(
  route: CopyRoute,
  src: DeviceBuffer,
  dst: DeviceBuffer,
  bytes: number,
): Promise<void> {
  return new Promise((resolve, reject) => route.copy(src, dst, bytes, (e) => (e ? reject(e) : resolve())));
}

let nextTask = 1;

export function launchAsync(
  o: Opened,
  op: string,
  impl: unknown,
  args: LaunchArg[],
  scalars: Scalars,
): Promise<void> {
  return new Promise((resolve, reject) =>
    o.device.queues[0]!.launch({ taskId: nextTask++, op, impl, args, scalars, after: [] }, (e) =>
      e ? reject(e) : resolve(),
    ),
  );
}

/** Uploads `inputs`, runs the op, downloads every argument; returns them in argument order. */
export async function runOnDevice(
  o: Opened,
  op: string,
  impl: unknown,
  inputs: readonly { desc: TensorDesc; data: HostArray }[],
  scalars: Scalars,
): Promise<HostArray[]> {
  const bufs = inputs.map((a) => o.device.node.alloc(a.desc.bytes));
  try {
    await Promise.all(
      inputs.map(async (a, i) => {
        const h = o.host.alloc(a.desc.bytes);
        new Uint8Array(h.sab, 0, a.desc.bytes).set(
          new Uint8Array(a.data.buffer, a.data.byteOffset, a.desc.bytes),
        );
        await copyAsync(o.h2d, h, bufs[i]!, a.desc.bytes);
      }),
    );
    await launchAsync(
      o,
      op,
      impl,
      inputs.map((a, i) => ({ buffer: bufs[i]!, desc: a.desc })),
      scalars,
    );
    return await Promise.all(
      inputs.map(async (a, i) => {
        const h = o.host.alloc(a.desc.bytes);
        await copyAsync(o.d2h, bufs[i]!, h, a.desc.bytes);
        return hostView(a.desc.dtype, h.sab, 0, a.data.length);
      }),
    );
  } finally {
    for (const b of bufs) o.device.node.free(b);
  }
}
