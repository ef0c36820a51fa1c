/**
 * One-node models checked on the CPU's device kernels against the float64 graph (evaluateReference):
 * random inputs, every output compared element by element. For composed ops and kernels whose ONNX
 * node tests leave attribute combinations out.
 */
import assert from 'node:assert/strict';
import { OnnxExecutor, type InputTensor } from '../../src/onnx/executor.js';
import { parseOnnxModel } from '../../src/onnx/model.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { encodeModel, floatTensor, type NodeSpec } from './build-model.js';

export type Attr = NonNullable<NodeSpec['attrs']>[number];
export const int = (name: string, i: number): Attr => ({ name, i, type: 2 });
export const float = (name: string, f: number): Attr => ({ name, f, type: 1 });
export const str = (name: string, v: string): Attr => ({ name, s: new TextEncoder().encode(v), type: 3 });
export const strs = (name: string, v: string[]): Attr => ({
  name,
  strings: v.map((x) => new TextEncoder().encode(x)),
  type: 8,
});
export const floats = (name: string, v: number[]): Attr => ({ name, floats: v, type: 6 });
export const ints = (name: string, v: number[]): Attr => ({ name, ints: v, type: 7 });

/** A deterministic generator of values in [lo, hi) (mulberry32), so a failure can be replayed. */
export function randoms(seed: number, lo = -1, hi = 1): (n: number) => number[] {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (n) => Array.from({ length: n }, () => lo + (hi - lo) * next());
}

export interface OpCase {
  readonly op: string;
  readonly opset?: number;
  readonly attrs?: Attr[];
  /** Inputs in node order; '' for an omitted optional input. type: ONNX element type code (1 float). */
  readonly inputs: ReadonlyArray<{ name: string; dims: number[]; data: number[]; type?: number } | ''>;
  readonly outputs: ReadonlyArray<string>;
  /**
   * Nodes run first, reading graph inputs listed in `feeds`: an input of the checked node named as one
   * of their outputs is computed during the run (integer data that would otherwise fold on the host).
   */
  readonly pre?: {
    nodes: NodeSpec[];
    feeds: Array<{ name: string; dims: number[]; data: number[]; type?: number }>;
    /** Float initializers (constants: what the planner may fold into a convolution). */
    constants?: Array<{ name: string; dims: number[]; data: number[] }>;
  };
}

/**
 * Runs the case on the CPU and checks every output against the float64 graph within `tol` (absolute,
 * scaled by max(1, |reference|)). Returns the largest difference; asserts the node ran on device kernels.
 */
export async function checkOp(rt: Runtime, c: OpCase, tol = 1e-5): Promise<number> {
  const made = new Set([
    ...(c.pre?.nodes ?? []).flatMap((n) => n.outputs),
    ...(c.pre?.constants ?? []).map((v) => v.name),
  ]);
  const present = [
    ...(c.pre?.feeds ?? []),
    ...c.inputs.filter((v): v is Exclude<typeof v, ''> => v !== '' && !made.has(v.name)),
  ];
  const model = parseOnnxModel(
    encodeModel({
      opset: c.opset ?? 17,
      nodes: [
        ...(c.pre?.nodes ?? []),
        {
          op: c.op,
          inputs: c.inputs.map((v) => (v === '' ? '' : v.name)),
          outputs: [...c.outputs],
          attrs: c.attrs,
        },
      ],
      inputs: present.map((v) => ({ name: v.name, dims: v.dims, type: v.type ?? 1 })),
      outputs: c.outputs.filter((o) => o !== '').map((name) => ({ name, dims: [] })),
      initializers: (c.pre?.constants ?? []).map((v) => floatTensor(v.name, v.dims, v.data)),
    }),
  );
  const feeds: Record<string, InputTensor> = Object.fromEntries(
    present.map((v) => [v.name, { dims: v.dims, data: v.data }]),
  );
  const exec = new OnnxExecutor(model, rt);
  try {
    const got = await exec.run(feeds, { device: 'cpu' });
    assert.ok(exec.lastPlanSteps > 0, `${c.op} was folded on the host, not run on kernels`);
    const ref = evaluateReference(model, feeds);
    let worst = 0;
    for (const name of c.outputs.filter((o) => o !== '')) {
      const g = got[name]!;
      const r = ref[name]!;
      assert.deepEqual(g.dims, r.dims, `${c.op} output ${name} dims`);
      r.data.forEach((want, i) => {
        const d = Math.abs(g.data[i]! - want);
        worst = Math.max(worst, d);
        assert.ok(
          d <= tol * Math.max(1, Math.abs(want)),
          `${c.op} ${name}[${i}] = ${g.data[i]}, float64 ${want}`,
        );
      });
    }
    return worst;
  } finally {
    exec.close();
  }
}
