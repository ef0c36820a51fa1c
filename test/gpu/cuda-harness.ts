/**
 * Opens the CUDA backend once for the GPU tests and runs work on a device directly (host SABs in,
 * launch on the compute queue, host SABs out), the way the runtime drives it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type HostArray, hostView } from '../../src/core/dtype.js';
import type { BackendStatus, HostBuffer, LaunchArg, Scalars, TensorDesc } from '../../src/devices/device.js';
import { createCudaBackend } from '../../src/devices/cuda/backend.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import type { CudaBuffer } from '../../src/devices/cuda/memory-node.js';
import type { ConformanceCase } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { KERNEL_DEFS, KERNEL_IMPLS } from '../../src/kernels/register.js';
import { HostNode } from '../../src/memory/host-node.js';

export const hostNode = new HostNode();
let opened: Promise<BackendStatus> | null = null;

export function openCuda(options: Record<string, unknown> = {}, calibrate = false): Promise<BackendStatus> {
  const open = (): Promise<BackendStatus> =>
    createCudaBackend().open({
      cacheDir: process.env['TANDEM_CACHE_DIR'] ?? mkdtempSync(join(tmpdir(), 'tandem-gpu-')),
      hostNode,
      calibrate,
      options,
      log: () => {},
    });
  if (Object.keys(options).length > 0 || calibrate) return open();
  opened ??= open();
  return opened;
}

/** The first CUDA device, or the reason there is none (tests skip with it). */
export async function cudaDevice(): Promise<{ device: CudaDevice | null; reason: string }> {
  const st = await openCuda();
  const device = (st.devices[0] as CudaDevice | undefined) ?? null;
  return { device, reason: st.reason ?? 'no CUDA device' };
}

export function hostBuffer(bytes: number): HostBuffer {
  return hostNode.alloc(bytes);
}

export function promise(fn: (done: (err: Error | null) => void) => void): Promise<void> {
  return new Promise((res, rej) => fn((err) => (err ? rej(err) : res())));
}

export function upload(dev: CudaDevice, src: HostBuffer, dst: CudaBuffer, bytes = src.bytes): Promise<void> {
  return promise((done) => dev.upload(src, dst, bytes, done));
}

export function download(
  dev: CudaDevice,
  src: CudaBuffer,
  dst: HostBuffer,
  bytes = dst.bytes,
): Promise<void> {
  return promise((done) => dev.download(src, dst, bytes, done));
}

let taskIds = 1;
export function launch(
  dev: CudaDevice,
  op: string,
  args: readonly LaunchArg[],
  scalars: Scalars,
  impl?: unknown,
): Promise<void> {
  const entry = impl ?? KERNEL_IMPLS.find((e) => e.op === op && e.backend === 'cuda')?.impl;
  return promise((done) =>
    dev.queues[0]!.launch({ taskId: taskIds++, op, impl: entry, args, scalars, after: [] }, done),
  );
}

/** Runs a conformance case on the GPU; returns mismatch lines (empty = pass). */
export async function runCudaCase(dev: CudaDevice, c: ConformanceCase, seed = 1): Promise<string[]> {
  const def = KERNEL_DEFS.find((d) => d.name === c.op)!;
  const prepared = prepareCase(def, c, seed);
  def.validate(prepared.descs, c.scalars);
  const args: LaunchArg[] = [];
  const hosts: Record<string, { host: HostBuffer; desc: TensorDesc; dev: CudaBuffer }> = {};
  for (const spec of def.args) {
    const desc = prepared.descs[spec.name]!;
    const host = hostBuffer(desc.bytes);
    const init = prepared.initial[spec.name]!;
    new Uint8Array(host.sab, 0, desc.bytes).set(new Uint8Array(init.buffer, init.byteOffset, desc.bytes));
    const buf = dev.node.alloc(desc.bytes);
    await upload(dev, host, buf, desc.bytes);
    hosts[spec.name] = { host, desc, dev: buf };
    args.push({ buffer: buf, desc });
  }
  try {
    await launch(dev, c.op, args, c.scalars);
    const results: Record<string, HostArray> = {};
    for (const name of prepared.outputs) {
      const h = hosts[name]!;
      await download(dev, h.dev, h.host, h.desc.bytes);
      const n = h.desc.shape.reduce((a, b) => a * b, 1);
      results[name] = hostView(h.desc.dtype, h.host.sab, 0, n);
    }
    return checkCase(c, prepared, results);
  } finally {
    for (const h of Object.values(hosts)) dev.node.free(h.dev);
  }
}
