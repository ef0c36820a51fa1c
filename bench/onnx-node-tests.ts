/**
 * ONNX's node tests on one device (the CUDA run on the H200 of issue 17): counts of passed, failed,
 * unsupported and skipped tests, each failure with its reason.
 *
 *   node dist/bench/onnx-node-tests.js --dir <onnx/backend/test/data/node> [--device cuda]
 */
import { parseArgs } from 'node:util';
import { Runtime } from '../src/runtime/runtime.js';
import { runNodeTests } from '../src/onnx/node-tests.js';

const { values } = parseArgs({
  options: {
    dir: { type: 'string', default: '/usr/share/libonnx-testdata/data/node' },
    device: { type: 'string', default: 'cuda' },
  },
});
const device = values.device!;
const rt = await Runtime.create({
  backends: device === 'cpu' ? ['cpu'] : ['cpu', device.replace(/\d+$/, '')],
  calibrate: false,
  log: () => undefined,
});
const t0 = performance.now();
const s = await runNodeTests(rt, values.dir!, { device });
for (const o of s.outcomes)
  if (o.status === 'failed') console.log(JSON.stringify({ failed: o.name, detail: o.detail }));
console.log(
  JSON.stringify({
    device,
    dir: values.dir,
    total: s.outcomes.length,
    passed: s.passed,
    passedOnDevice: s.passedOnDevice,
    failed: s.failed,
    unsupported: s.unsupported,
    skipped: s.skipped,
    seconds: (performance.now() - t0) / 1000,
  }),
);
await rt.close();
process.exitCode = s.failed === 0 ? 0 : 1;
