/**
 * RNN, GRU and LSTM on the CPU's kernels against the float64 graph, for the attributes ONNX's node tests
 * leave out: both directions, layout 1, initial states, sequence_lens, peepholes, clip, GRU's
 * linear_before_reset and activations with parameters. Random weights and inputs (seeded).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Runtime } from '../../src/runtime/runtime.js';
import { checkOp, float, floats, int, randoms, str, strs, type Attr } from './op-check.js';

type Cell = 'RNN' | 'GRU' | 'LSTM';
const GATES: Record<Cell, number> = { RNN: 1, GRU: 3, LSTM: 4 };

interface Case {
  cell: Cell;
  dirs?: 1 | 2;
  direction?: string;
  layout?: 0 | 1;
  lens?: number[];
  initial?: boolean;
  bias?: boolean;
  peepholes?: boolean;
  attrs?: Attr[];
}

function rnnCase(k: Case, seed: number) {
  const [T, B, I, H] = [4, 3, 5, 6];
  const dirs = k.dirs ?? 1;
  const G = GATES[k.cell];
  const r = randoms(seed, -0.8, 0.8);
  const st = k.layout === 1 ? [B, dirs, H] : [dirs, B, H];
  const inputs = [
    { name: 'X', dims: k.layout === 1 ? [B, T, I] : [T, B, I], data: r(T * B * I) },
    { name: 'W', dims: [dirs, G * H, I], data: r(dirs * G * H * I) },
    { name: 'R', dims: [dirs, G * H, H], data: r(dirs * G * H * H) },
    k.bias ? { name: 'B', dims: [dirs, 2 * G * H], data: r(dirs * 2 * G * H) } : ('' as const),
    k.lens ? { name: 'L', dims: [B], data: k.lens, type: 6 } : ('' as const),
    k.initial ? { name: 'h0', dims: st, data: r(dirs * B * H) } : ('' as const),
  ];
  if (k.cell === 'LSTM') {
    inputs.push(k.initial ? { name: 'c0', dims: st, data: r(dirs * B * H) } : '');
    inputs.push(k.peepholes ? { name: 'P', dims: [dirs, 3 * H], data: r(dirs * 3 * H) } : '');
  }
  while (inputs[inputs.length - 1] === '') inputs.pop();
  const attrs = [int('hidden_size', H), ...(k.attrs ?? [])];
  if (k.direction) attrs.push(str('direction', k.direction));
  if (k.layout !== undefined) attrs.push(int('layout', k.layout));
  return {
    op: k.cell,
    opset: 14,
    attrs,
    inputs,
    outputs: k.cell === 'LSTM' ? ['Y', 'Y_h', 'Y_c'] : ['Y', 'Y_h'],
  };
}

describe('onnx RNN / GRU / LSTM composed from kernels', () => {
  let rt: Runtime;
  before(async () => {
    rt = await Runtime.create({ backends: ['cpu'], calibrate: false, log: () => undefined });
  });
  after(async () => {
    await rt.close();
  });

  const cases: Array<[string, Case]> = [];
  for (const cell of ['RNN', 'GRU', 'LSTM'] as const) {
    cases.push([`${cell} forward with bias and initial state`, { cell, bias: true, initial: true }]);
    cases.push([`${cell} reverse`, { cell, direction: 'reverse', bias: true }]);
    cases.push([
      `${cell} bidirectional, layout 1`,
      { cell, dirs: 2, direction: 'bidirectional', layout: 1, bias: true, initial: true },
    ]);
    cases.push([`${cell} sequence_lens 4, 1, 3`, { cell, lens: [4, 1, 3], bias: true, initial: true }]);
    cases.push([`${cell} clip 0.5`, { cell, bias: true, attrs: [float('clip', 0.5)] }]);
  }
  cases.push([
    'LSTM peepholes, bidirectional',
    { cell: 'LSTM', dirs: 2, direction: 'bidirectional', peepholes: true, bias: true, initial: true },
  ]);
  cases.push([
    'GRU linear_before_reset',
    { cell: 'GRU', bias: true, initial: true, attrs: [int('linear_before_reset', 1)] },
  ]);
  cases.push([
    'RNN with parameterised activations per direction',
    {
      cell: 'RNN',
      dirs: 2,
      direction: 'bidirectional',
      attrs: [
        strs('activations', ['ScaledTanh', 'Affine']),
        floats('activation_alpha', [0.7, 1.3]),
        floats('activation_beta', [1.5, -0.2]),
      ],
    },
  ]);
  cases.push([
    'LSTM with HardSigmoid, Softsign, LeakyRelu',
    {
      cell: 'LSTM',
      bias: true,
      attrs: [
        strs('activations', ['HardSigmoid', 'Softsign', 'LeakyRelu']),
        floats('activation_alpha', [0.3, 0.05]),
      ],
    },
  ]);
  for (const [i, [name, k]] of cases.entries()) {
    it(name, async () => {
      const worst = await checkOp(rt, rnnCase(k, 100 + i), 2e-5);
      assert.ok(Number.isFinite(worst));
    });
  }

  it('refuses input_forget and sequence_lens with a reverse direction as unsupported, naming the attribute', async () => {
    const forget = rnnCase({ cell: 'LSTM', attrs: [int('input_forget', 1)] }, 1);
    await assert.rejects(checkOp(rt, forget), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'TANDEM_ERR_UNSUPPORTED');
      assert.match(e.message, /LSTM, domain ai\.onnx, opset 14, attribute input_forget/);
      return true;
    });
    const rev = rnnCase({ cell: 'GRU', direction: 'reverse', lens: [2, 4, 1] }, 2);
    await assert.rejects(checkOp(rt, rev), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'TANDEM_ERR_UNSUPPORTED');
      assert.match(e.message, /attribute direction/);
      return true;
    });
  });
});
