/** Shared setup for runtime tests: an isolated CPU runtime with no calibration runs. */
import { fillRandom } from '../../src/core/seeded-random.js';
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
  return fillRandom(new Float64Array(n), seed);
}
