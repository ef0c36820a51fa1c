/**
 * ONNX's backend test cases as the onnx package ships them (Debian `libonnx-testdata`, or the pip
 * package's onnx/backend/test/data/node): a folder per test with model.onnx and test_data_set_N/
 * holding input_K.pb and output_K.pb TensorProto files.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadOnnxFile, type OnnxModel, type ValueKind } from './model.js';
import { decodeTensor } from './proto.js';
import { decodeOptional, decodeSequence, type ValueData } from './sequence-proto.js';
import { tensorFromProto } from './tensor-proto.js';

export interface NodeTestCase {
  readonly name: string;
  readonly dir: string;
}

export interface NodeTestData {
  readonly model: OnnxModel;
  /** Inputs by the model's input names; expected outputs in the model's output order. */
  readonly sets: ReadonlyArray<{ inputs: Record<string, ValueData>; outputs: ValueData[] }>;
}

/** Candidate folders of node tests: $ONNX_NODE_TESTS, Debian's, then pip onnx's next to python3. */
export const NODE_TEST_DIRS = ['/usr/share/libonnx-testdata/data/node'];

export function listNodeTests(root: string): NodeTestCase[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(root, d.name, 'model.onnx')))
    .map((d) => ({ name: d.name, dir: join(root, d.name) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** A value file: a TensorProto, or a SequenceProto/OptionalProto where the graph value is one. */
function readPb(path: string, kind: ValueKind | undefined): ValueData {
  const bytes = readFileSync(path);
  if (kind === 'sequence') return decodeSequence(bytes);
  if (kind === 'optional-tensor' || kind === 'optional-sequence') return decodeOptional(bytes);
  return tensorFromProto(decodeTensor(bytes));
}

export function loadNodeTest(c: NodeTestCase): NodeTestData {
  const model = loadOnnxFile(join(c.dir, 'model.onnx'));
  const sets = readdirSync(c.dir)
    .filter((d) => d.startsWith('test_data_set_'))
    .sort()
    .map((d) => {
      const dir = join(c.dir, d);
      const files = readdirSync(dir);
      const count = (prefix: string) => files.filter((f) => f.startsWith(prefix) && f.endsWith('.pb')).length;
      const inputs: Record<string, ValueData> = {};
      // Inputs are in the graph's input order; optional inputs left out by the file come last.
      for (let k = 0; k < count('input_'); k++)
        inputs[model.inputs[k]?.name ?? `#${k}`] = readPb(join(dir, `input_${k}.pb`), model.inputs[k]?.kind);
      const outputs = Array.from({ length: count('output_') }, (_, k) =>
        readPb(join(dir, `output_${k}.pb`), model.outputs[k]?.kind),
      );
      return { inputs, outputs };
    });
  return { model, sets };
}

/** ONNX's backend-test check: |got − want| ≤ atol + rtol·|want|, NaN where NaN is expected. */
export function closeTo(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  rtol = 1e-3,
  atol = 1e-7,
): { ok: boolean; maxAbs: number; at: number } {
  let maxAbs = 0;
  let at = -1;
  let ok = got.length === want.length;
  for (let i = 0; i < Math.min(got.length, want.length); i++) {
    const [g, w] = [got[i]!, want[i]!];
    if (Number.isNaN(w) && Number.isNaN(g)) continue;
    if (w === g) continue;
    const d = Math.abs(g - w);
    if (!(d <= atol + rtol * Math.abs(w))) {
      ok = false;
      if (at < 0) at = i;
    }
    if (d > maxAbs || Number.isNaN(d)) maxAbs = Number.isNaN(d) ? Infinity : Math.max(maxAbs, d);
  }
  return { ok, maxAbs, at };
}
