/**
 * ONNX's node tests on one device (the CUDA run on the H200 of issue 17): counts of passed, failed,
 * unsupported and skipped tests, each failure with its reason.
 *
 *   node dist/bench/onnx-node-tests.js --dir <onnx/backend/test/data/node> [--device cuda] [--strict]
 * A kernel the device cannot run goes to the CPU (RunOptions.fallback; `passedWithFallback` counts the
 * tests that needed it, `--fallback-ops` lists their ops); --strict refuses it (unsupported) instead.
 */
import { parseArgs } from 'node:util';
import { Runtime } from '../src/runtime/runtime.js';
import { runNodeTests } from '../src/onnx/node-tests.js';

const { values } = parseArgs({
  options: {
    dir: { type: 'string', default: '/usr/share/libonnx-testdata/data/node' },
    device: { type: 'string', default: 'cuda' },
    strict: { type: 'boolean', default: false },
    'fallback-ops': { type: 'boolean', default: false },
  },
});
const device = values.device!;
const rt = await Runtime.create({
  backends: device === 'cpu' ? ['cpu'] : ['cpu', device.replace(/\d+$/, '')],
  calibrate: false,
  log: () => undefined,
});
const t0 = performance.now();
const s = await runNodeTests(rt, values.dir!, { device, ...(values.strict ? { fallback: null } : {}) });
if (values['fallback-ops']) {
  const ops = new Map<string, number>();
  for (const o of s.outcomes)
    for (const n of o.fallbackNodes ?? []) {
      const op = n.split(':')[0]!;
      ops.set(op, (ops.get(op) ?? 0) + 1);
    }
  console.log(JSON.stringify({ fallbackOps: Object.fromEntries([...ops].sort((a, b) => b[1] - a[1])) }));
}
for (const o of s.outcomes)
  if (o.status === 'failed') console.log(JSON.stringify({ failed: o.name, detail: o.detail }));
console.log(
  JSON.stringify({
    device,
    dir: values.dir,
    total: s.outcomes.length,
    passed: s.passed,
    passedOnDevice: s.passedOnDevice,
    passedWithFallback: s.passedWithFallback,
    failed: s.failed,
    unsupported: s.unsupported,
    skipped: s.skipped,
    seconds: (performance.now() - t0) / 1000,
  }),
);
await rt.close();
process.exitCode = s.failed === 0 ? 0 : 1;
