/**
 * An ONNX run placed on WebGPU whose graph has nodes WGSL does not cover (a kernel WebGPU declines on
 * its dtypes: ReduceLogSumExp on f64 needs f64 exp/log): those kernels run on the CPU
 * (RunOptions.fallback, as ONNX Runtime falls back to its CPU provider) and the run answers; with
 * `fallback: null` the same tests are refused up front as TANDEM_ERR_UNSUPPORTED naming the node, and
 * nothing fails. Nodes with WGSL kernels (Where with its bool condition, the losses' gathers) stay on
 * WebGPU. ONNX's own node tests
 * (libonnx-testdata) are the graphs; an observer checks where the tasks ran. Skips without a WebGPU
 * adapter or the test data.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runNodeTest, runNodeTests } from '../../src/onnx/node-tests.js';
import { NODE_TEST_DIRS } from '../../src/onnx/test-data.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openWebGpu } from './harness.js';

const root = process.env.ONNX_NODE_TESTS ?? NODE_TEST_DIRS.find((d) => existsSync(d));
const probe = await openWebGpu();
if (probe.ok) await probe.opened.device.close();
const skip = !probe.ok
  ? probe.reason
  : root
    ? false
    : 'libonnx-testdata is not installed (apt-get install libonnx-testdata)';
if (skip) console.log(`# onnx fallback tests skipped: ${skip}`);

void describe('onnx on WebGPU with the CPU as fallback', { skip }, () => {
  let rt: Runtime;
  /** device kind of each task that ended, by op, since the last clear. */
  const placed = new Map<string, Set<string>>();
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu', 'webgpu'], calibrate: false, log: () => undefined });
    rt.addObserver({
      onTaskEnd: (e) => {
        const kind = e.deviceId.replace(/\d+$/, '');
        (placed.get(e.op) ?? placed.set(e.op, new Set()).get(e.op)!).add(kind);
      },
    });
  });
  after(async () => {
    await rt.close();
  });

  it('a ReduceLogSumExp node on f64 runs on the CPU in a WebGPU run; strict refuses it', async () => {
    placed.clear();
    const name = 'test_reduce_log_sum_exp_keepdims_example';
    const c = { name, dir: join(root!, name) };
    const o = await runNodeTest(rt, c, { device: 'webgpu' });
    assert.equal(o.status, 'passed', o.detail);
    assert.deepEqual(
      o.fallbackNodes?.map((n) => n.split(':')[0]),
      ['ReduceLogSumExp'],
    );
    assert.deepEqual([...(placed.get('onnx_reduce') ?? [])], ['cpu']);
    const strict = await runNodeTest(rt, c, { device: 'webgpu', fallback: null });
    assert.equal(strict.status, 'unsupported');
    assert.match(
      strict.detail,
      /node ReduceLogSumExp:.* needs kernel onnx_reduce .*webgpu cannot run.*no fallback/,
    );
  });

  it('a Where node (u8 condition) runs on WebGPU with no fallback', async () => {
    placed.clear();
    const c = { name: 'test_where_example', dir: join(root!, 'test_where_example') };
    const o = await runNodeTest(rt, c, { device: 'webgpu', fallback: null });
    assert.equal(o.status, 'passed', o.detail);
    assert.equal(o.fallbackNodes, undefined);
    assert.deepEqual([...(placed.get('onnx_where') ?? [])], ['webgpu']);
  });

  it('every node test: none fails; the ones that need the fallback are refused when strict', async () => {
    const s = await runNodeTests(rt, root!, { device: 'webgpu' });
    const strict = await runNodeTests(rt, root!, { device: 'webgpu', fallback: null });
    console.log(
      `onnx node tests on webgpu: ${s.passed} passed (${s.passedWithFallback} with CPU fallback), ${s.failed} failed, ${s.unsupported} unsupported; strict: ${strict.passed} passed, ${strict.failed} failed, ${strict.unsupported} unsupported`,
    );
    const failures = (x: typeof s): string[] =>
      x.outcomes.filter((o) => o.status === 'failed').map((o) => `${o.name}: ${o.detail}`);
    assert.deepEqual(failures(s), []);
    assert.deepEqual(failures(strict), []);
    assert.ok(s.passedWithFallback > 0, 'no test needed the fallback: the strict comparison checks nothing');
    const byName = new Map(strict.outcomes.map((o) => [o.name, o]));
    for (const o of s.outcomes) {
      if (o.status !== 'passed') continue;
      const st = byName.get(o.name)!;
      if (o.fallbackNodes) assert.equal(st.status, 'unsupported', `${o.name} ran strict`);
      else assert.equal(st.status, 'passed', `${o.name} strict: ${st.detail}`);
    }
  });
});
