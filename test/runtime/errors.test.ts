/** Bad input and failures: clear errors with stable codes, and the runtime keeps serving. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTandemError } from '../../src/core/errors.js';
import { cpuRuntime, expectCode, registerDoubleOrThrow } from './helpers.js';

const code = expectCode;

test('bad shapes, dtypes and sizes are refused before anything runs', async () => {
  const rt = await cpuRuntime();
  try {
    assert.throws(() => rt.tensor([2, -1]), code('TANDEM_ERR_SIZE'));
    assert.throws(() => rt.tensor([2.5]), code('TANDEM_ERR_SIZE'));
    assert.throws(() => rt.tensor([2 ** 30, 2 ** 30]), code('TANDEM_ERR_SIZE'));
    assert.throws(() => rt.tensor([2], 'f8' as 'f32'), code('TANDEM_ERR_DTYPE'));
    assert.throws(() => rt.tensor([3], 'f32', [1, 2]), code('TANDEM_ERR_SHAPE'));
    const a = rt.tensor([4, 3], 'f32', new Float32Array(12).fill(1));
    const b = rt.tensor([4, 3], 'f32', new Float32Array(12).fill(1));
    const c = rt.tensor([4, 3], 'f32');
    assert.throws(() => rt.submit({ kernel: 'gemm', args: { a, b, c } }), code('TANDEM_ERR_SHAPE'));
    const d = rt.tensor([4], 'f64', [1, 2, 3, 4]);
    const e = rt.tensor([4], 'f32', [1, 2, 3, 4]);
    assert.throws(
      () => rt.submit({ kernel: 'axpy', args: { x: d, y: e }, scalars: { alpha: 1 } }),
      code('TANDEM_ERR_DTYPE'),
    );
    assert.throws(() => rt.submit({ kernel: 'nope', args: {} }), code('TANDEM_ERR_UNKNOWN_KERNEL'));
    assert.throws(() => rt.submit({ kernel: 'scale', args: {} }), code('TANDEM_ERR_INVALID_ARGUMENT'));
    assert.throws(
      () => rt.submit({ kernel: 'scale', args: { x: e }, scalars: { alpha: 1 }, device: 'cuda7' }),
      code('TANDEM_ERR_NO_DEVICE'),
    );
    assert.throws(
      () => rt.submit({ kernel: 'scale', args: { x: e }, scalars: { alpha: 1 }, priority: Number.NaN }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    // Nothing was recorded: the tensors are untouched and usable.
    assert.deepEqual(Array.from(await rt.read(e)), [1, 2, 3, 4]);
  } finally {
    await rt.close();
  }
});

test('an allocation larger than the memory budget fails with requested and available bytes', async () => {
  const rt = await cpuRuntime({ memoryBudget: { host: 1 << 20 } });
  try {
    let caught: unknown;
    try {
      rt.tensor([1 << 20], 'f32', new Float32Array(1 << 20).fill(1));
    } catch (e) {
      caught = e;
    }
    assert.ok(isTandemError(caught, 'TANDEM_ERR_OUT_OF_MEMORY'), String(caught));
    assert.equal(caught.details['requestedBytes'], 4 << 20);
    assert.equal(caught.details['availableBytes'], 1 << 20);
    assert.match(caught.message, /4\.0 MiB.*1\.0 MiB available/);
    // A later, smaller tensor still works.
    const small = rt.tensor([16], 'f32', new Float32Array(16).fill(3));
    assert.equal((await rt.read(small))[0], 3);
  } finally {
    await rt.close();
  }
});

test('a kernel that throws inside a worker fails its task; dependents fail naming it; others run', async () => {
  const rt = await cpuRuntime();
  try {
    registerDoubleOrThrow(rt);
    const bad = rt.tensor([3], 'f32', [1, -1, 2]);
    const out = rt.tensor([3], 'f32');
    const t1 = rt.submit({ kernel: 'double_or_throw', args: { x: bad, y: out }, name: 'doubler' });
    const t2 = rt.submit({ kernel: 'scale', args: { x: out }, scalars: { alpha: 2 } });
    const t3 = rt.submit({ kernel: 'scale', args: { x: out }, scalars: { alpha: 2 } });
    await assert.rejects(
      t1.done,
      (e: unknown) => code('TANDEM_ERR_KERNEL_FAILED')(e) && /negative input at 1/.test((e as Error).message),
    );
    await assert.rejects(
      t2.done,
      (e: unknown) => code('TANDEM_ERR_DEPENDENCY_FAILED')(e) && /doubler/.test((e as Error).message),
    );
    await assert.rejects(t3.done, code('TANDEM_ERR_DEPENDENCY_FAILED'));
    // The runtime keeps serving: the same kernel on good data works.
    const good = rt.tensor([3], 'f32', [1, 2, 3]);
    const out2 = rt.tensor([3], 'f32');
    await rt.submit({ kernel: 'double_or_throw', args: { x: good, y: out2 } }).done;
    assert.deepEqual(Array.from(await rt.read(out2)), [2, 4, 6]);
  } finally {
    await rt.close();
  }
});

test('a failed task nobody awaits is no unhandled rejection, and its error stays readable', async () => {
  const rt = await cpuRuntime();
  try {
    registerDoubleOrThrow(rt);
    const t = rt.submit({
      kernel: 'double_or_throw',
      args: { x: rt.tensor([1], 'f32', [-5]), y: rt.tensor([1], 'f32') },
    });
    await rt.idle();
    assert.equal(t.state, 'failed');
    assert.equal(t.error?.code, 'TANDEM_ERR_KERNEL_FAILED');
  } finally {
    await rt.close();
  }
});

test('use after close is refused with TANDEM_ERR_CLOSED', async () => {
  const rt = await cpuRuntime();
  const x = rt.tensor([2], 'f32', [1, 2]);
  await rt.close();
  assert.throws(() => rt.tensor([2]), code('TANDEM_ERR_CLOSED'));
  assert.throws(
    () => rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 } }),
    code('TANDEM_ERR_CLOSED'),
  );
  await assert.rejects(rt.read(x), code('TANDEM_ERR_CLOSED'));
});

test('tensors from another runtime and freed tensors are refused', async () => {
  const rt1 = await cpuRuntime();
  const rt2 = await cpuRuntime();
  try {
    const x = rt1.tensor([2], 'f32', [1, 2]);
    assert.throws(
      () => rt2.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 } }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
    rt1.free(x);
    assert.throws(
      () => rt1.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 } }),
      code('TANDEM_ERR_INVALID_ARGUMENT'),
    );
  } finally {
    await rt1.close();
    await rt2.close();
  }
});
