/**
 * Einsum on the CPU's kernels against the float64 definition (a loop over every label's values), for
 * equations beyond ONNX's five node tests: implicit outputs, traces and diagonals, outer products,
 * broadcast ellipsis batches and three operands. Random inputs (seeded).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { checkOp, randoms, str } from './op-check.js';

const CASES: Array<[string, number[][]]> = [
  [
    'ij,jk->ik',
    [
      [3, 4],
      [4, 5],
    ],
  ],
  [
    'ij,jk',
    [
      [3, 4],
      [4, 2],
    ],
  ],
  [
    'bij,bkj->bik',
    [
      [2, 3, 4],
      [2, 5, 4],
    ],
  ],
  ['ii->i', [[4, 4]]],
  ['ii', [[5, 5]]],
  ['bii->b', [[3, 4, 4]]],
  ['iij->ji', [[3, 3, 2]]],
  ['i,j->ij', [[3], [4]]],
  [
    '...ij,...jk->...ik',
    [
      [2, 1, 3, 4],
      [5, 4, 2],
    ],
  ],
  [
    'ijk,jl,lk->i',
    [
      [2, 3, 4],
      [3, 5],
      [5, 4],
    ],
  ],
  [
    'abc,cd->dba',
    [
      [2, 3, 4],
      [4, 3],
    ],
  ],
  ['ij->', [[3, 4]]],
];

describe('onnx Einsum composed from kernels', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  for (const [k, [eq, shapes]] of CASES.entries()) {
    it(eq, async () => {
      const r = randoms(7 + k);
      const inputs = shapes.map((dims, i) => ({
        name: `x${i}`,
        dims,
        data: r(dims.reduce((a, b) => a * b, 1)),
      }));
      await checkOp(
        rt,
        { op: 'Einsum', opset: 12, attrs: [str('equation', eq)], inputs, outputs: ['y'] },
        1e-5,
      );
    });
  }

  it('names a malformed equation as bad data', async () => {
    const r = randoms(1);
    const x = { name: 'x0', dims: [2, 3], data: r(6) };
    await assert.rejects(
      checkOp(rt, {
        op: 'Einsum',
        opset: 12,
        attrs: [str('equation', 'ijk->i')],
        inputs: [x],
        outputs: ['y'],
      }),
      (e: Error & { code?: string }) => e.code === 'TANDEM_ERR_SHAPE' || e.code === 'TANDEM_ERR_BAD_DATA',
    );
  });
});
