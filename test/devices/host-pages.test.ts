import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPagesForLargeBuffers } from '../../src/devices/host-pages.js';

void test('glibc mmap threshold is fixed once, and big buffers still work', () => {
  const expected = process.platform === 'linux' && process.env['TANDEM_MALLOC_TUNING'] !== '0';
  assert.equal(freshPagesForLargeBuffers(), expected);
  assert.equal(freshPagesForLargeBuffers(), expected, 'idempotent');
  // Fresh pages are zero: allocate, write, drop, allocate again and read zeros.
  for (let i = 0; i < 4; i++) {
    const a = new Float32Array(new SharedArrayBuffer(8 << 20));
    assert.equal(a[a.length - 1], 0);
    assert.equal(a[12345], 0);
    a.fill(i + 1);
  }
});
