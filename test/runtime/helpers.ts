/** Shared setup for runtime tests: an isolated CPU runtime with no calibration runs. */
import assert from 'node:assert/strict';
import { isTandemError, type ErrorCode } from '../../src/core/errors.js';
import { fillRandom } from '../../src/core/seeded-random.js';
import type { KernelDef } from '../../src/kernels/kernel.js';
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

/** An assert.throws/rejects check: a TandemError with code `c` (and a message matching `pattern`). */
export function expectCode(c: ErrorCode, pattern?: RegExp): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(isTandemError(e), `expected a TandemError, got ${String(e)}`);
    assert.equal(e.code, c, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  };
}

/** `double_or_throw` (x → y = 2x; throws "negative input at i" inside the worker): a kernel that fails. */
const doubleOrThrowDef: KernelDef = {
  name: 'double_or_throw',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate: () => undefined,
  cost: (a) => ({ flops: a['x']!.bytes / 4, bytes: 2 * a['x']!.bytes }),
};

export function registerDoubleOrThrow(rt: Runtime): void {
  const module = new URL('./fixtures/custom-kernels.js', import.meta.url).href;
  rt.registerKernel(doubleOrThrowDef, { cpu: { module, export: 'doubleOrThrow' } });
}
