/**
 * What the runtime-level GPU tests share: a Runtime on the CUDA backend (with the reason when there is
 * no GPU), cuda0's counts of prepared sequences captured and replayed as CUDA graphs, and a relative
 * difference that fits values near zero.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { Runtime } from '../../src/runtime/runtime.js';

export interface CudaRuntime {
  readonly rt: Runtime;
  readonly hasCuda: boolean;
  /** Why the suite is skipped when hasCuda is false. */
  readonly reason: string;
}

export async function cudaRuntime(cachePrefix: string): Promise<CudaRuntime> {
  const rt = await Runtime.create({
    backends: ['cuda'],
    calibrate: false,
    cacheDir: process.env['TANDEM_CACHE_DIR'] ?? mkdtempSync(join(tmpdir(), cachePrefix)),
    log: () => undefined,
  });
  const hasCuda = rt.devices.some((d) => d.info.kind === 'cuda');
  const reason = rt.backends.find((b) => b.kind === 'cuda')?.reason ?? 'no CUDA device';
  if (!hasCuda) console.log(`# skip: ${reason}`);
  return { rt, hasCuda, reason };
}

/** cuda0's counts of prepared sequences captured and replayed as CUDA graphs. */
export function graphStats(rt: Runtime): {
  captured: number;
  replayed: number;
  declined: number;
  refused: number;
} {
  const d = rt.devices.find((x) => x.info.id === 'cuda0') as unknown as CudaDevice;
  return { ...d.sequenceGraphs.stats };
}

/** max |a − b| / (1 + |b|) over the elements; Infinity when one is NaN. */
export function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / (1 + Math.abs(b[i]!));
    if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
  }
  return worst;
}
