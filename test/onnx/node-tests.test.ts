/**
 * ONNX's own node tests (Debian libonnx-testdata: model.onnx with input/expected-output .pb files,
 * written by the ONNX project) on the CPU at ONNX's tolerances (rtol 1e-3, atol 1e-7). Every test whose
 * ops Tandem implements must pass; the counts are printed. Tests Tandem refuses (TANDEM_ERR_UNSUPPORTED:
 * op, opset, dtype, optional output) are counted, not hidden, and a few are skipped with a reason
 * (SKIPPED_NODE_TESTS).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { runNodeTests } from '../../src/onnx/node-tests.js';
import { NODE_TEST_DIRS } from '../../src/onnx/test-data.js';

const root = process.env.ONNX_NODE_TESTS ?? NODE_TEST_DIRS.find((d) => existsSync(d));

describe(
  'onnx node tests (libonnx-testdata) on the CPU',
  { skip: root ? false : 'libonnx-testdata is not installed (apt-get install libonnx-testdata)' },
  () => {
    let rt: Runtime;
    before(async () => {
      rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
    });
    after(async () => {
      await rt.close();
    });

    it('passes every supported test at rtol 1e-3, atol 1e-7', async () => {
      const s = await runNodeTests(rt, root!, { device: 'cpu' });
      const unsupported = new Map<string, number>();
      for (const o of s.outcomes.filter((x) => x.status === 'unsupported')) {
        const why = o.detail.replace(/node '[^']*'/, '').slice(0, 90);
        unsupported.set(why, (unsupported.get(why) ?? 0) + 1);
      }
      console.log(
        `onnx node tests (${root}): ${s.outcomes.length} total, ${s.passed} passed (${s.passedOnDevice} on device kernels, ${s.passed - s.passedOnDevice} folded on the host), ${s.failed} failed, ${s.unsupported} unsupported, ${s.skipped} skipped`,
      );
      console.log(
        'most common reasons for unsupported:\n' +
          [...unsupported]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 25)
            .map(([k, v]) => `  ${v} × ${k}`)
            .join('\n'),
      );
      const failed = s.outcomes.filter((o) => o.status === 'failed');
      assert.deepEqual(
        failed.map((o) => `${o.name}: ${o.detail}`),
        [],
      );
      // A harness that passes nothing proves nothing: the device path must carry most of the passes.
      assert.ok(s.passedOnDevice >= 150, `only ${s.passedOnDevice} tests ran on device kernels`);
    });

    it('passes the same tests with the kernels submitted as runtime sequences', async () => {
      const tasks = await runNodeTests(rt, root!, { device: 'cpu' });
      const seq = await runNodeTests(rt, root!, { device: 'cpu', sequences: true });
      const passed = (x: typeof tasks): string[] =>
        x.outcomes.filter((o) => o.status === 'passed').map((o) => o.name);
      assert.deepEqual(passed(seq), passed(tasks));
      assert.deepEqual(
        seq.outcomes.filter((o) => o.status === 'failed').map((o) => `${o.name}: ${o.detail}`),
        [],
      );
    });
  },
);
