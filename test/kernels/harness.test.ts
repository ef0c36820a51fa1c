/** The conformance check itself must be able to fail: a kernel that skips or corrupts outputs is caught. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { defOf } from './cpu-harness.js';

void describe('conformance harness', () => {
  const c = CONFORMANCE_CASES.find((x) => x.name === 'unary exp f32')!;

  void it('flags outputs left unwritten (NaN poison)', () => {
    const prepared = prepareCase(defOf(c.op), c);
    assert.ok(checkCase(c, prepared, prepared.initial).length > 0);
  });

  void it('flags an error of a few ulps beyond tolerance', () => {
    const prepared = prepareCase(defOf(c.op), c);
    const y = Float32Array.from(prepared.expected.y!, (v) => v * (1 + 8 * c.rtol));
    assert.ok(checkCase(c, prepared, { ...prepared.initial, y }).length > 0);
  });

  void it('accepts the reference result itself', () => {
    const prepared = prepareCase(defOf(c.op), c);
    const y = Float32Array.from(prepared.expected.y!);
    assert.deepEqual(checkCase(c, prepared, { ...prepared.initial, y }), []);
  });

  void it('draws random, non-zero inputs that differ by seed', () => {
    const a = prepareCase(defOf(c.op), c, 1).initial.x!;
    const b = prepareCase(defOf(c.op), c, 2).initial.x!;
    assert.ok(a.every((v) => v !== 0));
    assert.notDeepEqual(a, b);
  });
});
