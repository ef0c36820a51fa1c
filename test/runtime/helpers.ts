/** Shared setup for runtime tests: an isolated CPU runtime with no calibration runs. */
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeConfig } from '../../src/runtime/config.js';

export function cpuRuntime(extra: RuntimeConfig = {}): Promise<Runtime> {
  return Runtime.create({
    backends: ['cpu'],
    calibrate: false,
    options: { cpu: { threads: 2 } },
    log: () => undefined,
    ...extra,
  });
}

/** Deterministic random values in [-1, 1) without zeros. */
export function randomValues(n: number, seed: number): Float64Array {
  let s = seed >>> 0 || 1;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 32) * 2 - 1 || 0.25;
  }
  return out;
}
