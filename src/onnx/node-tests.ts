/**
 * Runs ONNX's node tests on a runtime and sorts each into passed (on device kernels, or entirely folded
 * on the host when every input is integer data), failed (an error or a value outside ONNX's
 * tolerances), unsupported (an op, opset, dtype or feature Tandem refuses with TANDEM_ERR_UNSUPPORTED,
 * or a kernel with no implementation on the device) and skipped (listed here with the reason).
 */
import type { TandemError } from '../core/errors.js';
import { OnnxExecutor, type OnnxRuntime, type OutputValue, type RunOptions } from './executor.js';
import type { ValueData } from './sequence-proto.js';
import { closeTo, listNodeTests, loadNodeTest, type NodeTestCase } from './test-data.js';

/** Tests left out on purpose, with why. */
export const SKIPPED_NODE_TESTS: Readonly<Record<string, string>> = {
  test_cast_BFLOAT16_to_FLOAT: 'the test data stores bfloat16 tensors as uint16 (ONNX 1.12 generator)',
  test_cast_FLOAT_to_BFLOAT16: 'the expected output is stored as uint16 words, not bfloat16 values',
  test_castlike_BFLOAT16_to_FLOAT: 'bfloat16 stored as uint16 in the test data',
  test_castlike_BFLOAT16_to_FLOAT_expanded: 'bfloat16 stored as uint16 in the test data',
  test_castlike_FLOAT_to_BFLOAT16: 'bfloat16 stored as uint16 in the test data',
  test_castlike_FLOAT_to_BFLOAT16_expanded: 'bfloat16 stored as uint16 in the test data',
};

export interface NodeTestOutcome {
  readonly name: string;
  readonly status: 'passed' | 'failed' | 'unsupported' | 'skipped';
  /** passed: 'device' or 'host'; otherwise why. */
  readonly detail: string;
  readonly maxAbs?: number;
  /** Nodes with a kernel the run's device could not run, run on the fallback device instead. */
  readonly fallbackNodes?: readonly string[];
}

export interface NodeTestSummary {
  readonly passed: number;
  readonly passedOnDevice: number;
  /** Passed with some kernels on the fallback device (RunOptions.fallback). */
  readonly passedWithFallback: number;
  readonly failed: number;
  readonly unsupported: number;
  readonly skipped: number;
  readonly outcomes: readonly NodeTestOutcome[];
}

const UNSUPPORTED_CODES = new Set([
  'TANDEM_ERR_UNSUPPORTED',
  'TANDEM_ERR_UNKNOWN_KERNEL',
  'TANDEM_ERR_NO_DEVICE',
]);

function codeOf(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as TandemError).code) : '';
}

/** An output against the expected value: tensors at ONNX's tolerances, sequences item by item. */
function compareValue(what: string, got: OutputValue, want: ValueData): { maxAbs: number; detail?: string } {
  if ('sequence' in want || 'sequence' in got) {
    if (!('sequence' in want) || !('sequence' in got))
      return { maxAbs: 0, detail: `output ${what} kind differs` };
    if (got.sequence.length !== want.sequence.length)
      return {
        maxAbs: 0,
        detail: `output ${what} has ${got.sequence.length} items, expected ${want.sequence.length}`,
      };
    let maxAbs = 0;
    for (const [k, g] of got.sequence.entries()) {
      const r = compareValue(`${what}[${k}]`, g, want.sequence[k]!);
      maxAbs = Math.max(maxAbs, r.maxAbs);
      if (r.detail !== undefined) return { maxAbs, detail: r.detail };
    }
    return { maxAbs };
  }
  if ('optional' in want || 'optional' in got) {
    if (!('optional' in want) || !('optional' in got))
      return { maxAbs: 0, detail: `output ${what} kind differs` };
    if (want.optional === null || got.optional === null)
      return want.optional === got.optional
        ? { maxAbs: 0 }
        : { maxAbs: 0, detail: `output ${what}: one optional is empty` };
    return compareValue(what, got.optional, want.optional);
  }
  if (got.dims.join(',') !== want.dims.join(','))
    return {
      maxAbs: 0,
      detail: `output ${what} has dims [${got.dims.join(', ')}], expected [${want.dims.join(', ')}]`,
    };
  const r = closeTo(got.data, want.data);
  if (r.ok) return { maxAbs: r.maxAbs };
  return {
    maxAbs: r.maxAbs,
    detail: `output ${what}[${r.at}] = ${got.data[r.at]}, expected ${want.data[r.at]}`,
  };
}

export async function runNodeTest(
  rt: OnnxRuntime,
  c: NodeTestCase,
  opts: RunOptions = {},
): Promise<NodeTestOutcome> {
  if (SKIPPED_NODE_TESTS[c.name])
    return { name: c.name, status: 'skipped', detail: SKIPPED_NODE_TESTS[c.name]! };
  let exec: OnnxExecutor | undefined;
  try {
    const data = loadNodeTest(c);
    exec = new OnnxExecutor(data.model, rt);
    let maxAbs = 0;
    let onDevice = false;
    const fallbackNodes = new Set<string>();
    for (const set of data.sets) {
      const out = await exec.runValues(set.inputs, opts);
      onDevice ||= exec.lastPlanSteps > 0;
      for (const n of exec.lastFallbacks) fallbackNodes.add(n);
      for (const [i, o] of data.model.outputs.entries()) {
        const want = set.outputs[i];
        const got = out[o.name];
        if (!want || !got) return { name: c.name, status: 'failed', detail: `output ${o.name} missing` };
        const r = compareValue(o.name, got, want);
        maxAbs = Math.max(maxAbs, r.maxAbs);
        if (r.detail !== undefined)
          return { name: c.name, status: 'failed', detail: r.detail, maxAbs: r.maxAbs };
      }
    }
    return {
      name: c.name,
      status: 'passed',
      detail: onDevice ? 'device' : 'host',
      maxAbs,
      ...(fallbackNodes.size > 0 ? { fallbackNodes: [...fallbackNodes] } : {}),
    };
  } catch (err) {
    const code = codeOf(err);
    const msg = err instanceof Error ? err.message : String(err);
    if (UNSUPPORTED_CODES.has(code))
      return { name: c.name, status: 'unsupported', detail: msg.replace(/^TANDEM_ERR_\w+: /, '') };
    return { name: c.name, status: 'failed', detail: `${code || 'crash'}: ${msg}` };
  } finally {
    exec?.close();
  }
}

export async function runNodeTests(
  rt: OnnxRuntime,
  root: string,
  opts: RunOptions & { filter?: (name: string) => boolean } = {},
): Promise<NodeTestSummary> {
  const outcomes: NodeTestOutcome[] = [];
  for (const c of listNodeTests(root)) {
    if (opts.filter && !opts.filter(c.name)) continue;
    outcomes.push(await runNodeTest(rt, c, opts));
  }
  const count = (s: NodeTestOutcome['status']) => outcomes.filter((o) => o.status === s).length;
  return {
    passed: count('passed'),
    passedOnDevice: outcomes.filter((o) => o.status === 'passed' && o.detail === 'device').length,
    passedWithFallback: outcomes.filter((o) => o.status === 'passed' && o.fallbackNodes !== undefined).length,
    failed: count('failed'),
    unsupported: count('unsupported'),
    skipped: count('skipped'),
    outcomes,
  };
}
