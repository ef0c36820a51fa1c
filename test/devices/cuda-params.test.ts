/**
 * Kernel parameters of 64 bits are packed word by word into the launch buffer: exact for every safe
 * integer, negative ones in two's complement (negative strides of ONNX slices and pads), checked
 * against BigInt64Array's view of the same bytes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { writeParam64 } from '../../src/devices/cuda/launcher.js';

void test('64-bit kernel parameters: every safe integer exactly, negatives in two complement', () => {
  const buf = new ArrayBuffer(8 * 4);
  const u32 = new Uint32Array(buf);
  const i64 = new BigInt64Array(buf);
  const values = [
    0,
    1,
    -1,
    -2,
    -3,
    5,
    -2047,
    -2048,
    2 ** 31,
    -(2 ** 31),
    2 ** 32,
    -(2 ** 32),
    2 ** 32 + 7,
    -(2 ** 32) - 7,
    2 ** 40 + 3,
    -(2 ** 40) - 3,
    Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER,
    0x7f00_0000_1234,
  ];
  for (const v of values) {
    u32.fill(0xdeadbeef); // poisoned: both words must be written
    writeParam64(u32, 2, v);
    assert.equal(i64[2], BigInt(v), `value ${v}`);
    assert.equal(u32[0], 0xdeadbeef, 'the neighbouring slots are left alone');
    assert.equal(u32[6], 0xdeadbeef);
  }
  // Random safe integers of both signs.
  let seed = 12345;
  for (let k = 0; k < 2000; k++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const mag = Math.floor((seed / 2 ** 32) * Number.MAX_SAFE_INTEGER);
    const v = k % 2 === 0 ? mag : -mag;
    writeParam64(u32, 1, v);
    assert.equal(i64[1], BigInt(v), `value ${v}`);
  }
});
