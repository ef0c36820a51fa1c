/**
 * The conformance suite through the runtime, on every device that is present: the same data-driven
 * cases (random inputs, NaN-poisoned outputs, float64 references) for cpu, webgpu and cuda. Data
 * enters on the host and leaves through rt.read, so the copy table is exercised too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HostArray } from '../../src/core/dtype.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { Runtime } from '../../src/runtime/runtime.js';

const rt = await Runtime.create({ calibrate: false, log: () => undefined });
for (const b of rt.backends)
  if (!b.available) console.log(`# conformance: backend ${b.kind} skipped: ${b.reason ?? 'unavailable'}`);

for (const device of rt.devices) {
  if (device.info.kind === 'webgpu') {
    // WGSL permits a few ULP on transcendentals: test/webgpu/conformance.test.ts runs these same cases
    // with that (documented) widening, and test/webgpu/runtime.test.ts goes through the runtime.
    console.log(
      `# conformance through the runtime: ${device.info.id} is covered by test/webgpu/conformance.test.ts`,
    );
    continue;
  }
  test(`conformance through the runtime on ${device.info.id}`, async () => {
    let ran = 0;
    const skipped: string[] = [];
    const problems: string[] = [];
    for (const c of CONFORMANCE_CASES) {
      const k = rt.kernels.get(c.op);
      if (!k.impls.has(device.info.kind)) {
        skipped.push(`${c.name} (no ${device.info.kind} implementation)`);
        continue;
      }
      const prepared = prepareCase(k.def, c, 7);
      const descs = k.def.args.map((a) => prepared.descs[a.name]!);
      if (device.supports && !device.supports(c.op, descs, c.scalars)) {
        skipped.push(`${c.name} (declined by ${device.info.id})`);
        continue;
      }
      const tensors = Object.fromEntries(
        k.def.args.map((a) => {
          const d = prepared.descs[a.name]!;
          return [a.name, rt.tensor(d.shape, d.dtype, prepared.initial[a.name])];
        }),
      );
      await rt.submit({ kernel: c.op, args: tensors, scalars: c.scalars, device: device.info.id }).done;
      const results: Record<string, HostArray> = {};
      for (const name of prepared.outputs) results[name] = await rt.read(tensors[name]!);
      problems.push(...checkCase(c, prepared, results));
      for (const t of Object.values(tensors)) rt.free(t);
      ran++;
    }
    if (skipped.length)
      console.log(
        `# ${device.info.id}: ${skipped.length} cases skipped: ${skipped.slice(0, 5).join('; ')}${skipped.length > 5 ? '; ...' : ''}`,
      );
    assert.ok(ran > 0, `no case ran on ${device.info.id}`);
    assert.deepEqual(problems, []);
  });
}

test('conformance: close the runtime', async () => {
  await rt.close();
});
