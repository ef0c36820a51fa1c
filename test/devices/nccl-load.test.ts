/**
 * Loading NCCL where it is missing (this machine, CI): a TandemError with TANDEM_ERR_UNSUPPORTED naming
 * what was tried, never a crash, and NVLink multicast is switched off before any load is attempted.
 * The search includes the pip wheel's directory (nvidia/nccl/lib under a Python's site-packages).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { loadNccl, ncclDirs, ncclDtype } from '../../src/devices/cuda/ffi/nccl.js';

void describe('NCCL loading', () => {
  void it('finds the wheel directory of a Python environment (VIRTUAL_ENV)', () => {
    const venv = mkdtempSync(join(tmpdir(), 'venv-'));
    const lib = join(venv, 'lib', 'python3.12', 'site-packages', 'nvidia', 'nccl', 'lib');
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(lib, 'libnccl.so.2'), 'not a library');
    const before = process.env['VIRTUAL_ENV'];
    process.env['VIRTUAL_ENV'] = venv;
    try {
      assert.ok(ncclDirs([], []).includes(lib), 'the wheel directory is searched');
    } finally {
      if (before === undefined) delete process.env['VIRTUAL_ENV'];
      else process.env['VIRTUAL_ENV'] = before;
    }
  });

  void it('a missing (or unloadable) library is TANDEM_ERR_UNSUPPORTED with NCCL_NVLS_ENABLE=0 set', (t) => {
    const saved = process.env['NCCL_NVLS_ENABLE'];
    delete process.env['NCCL_NVLS_ENABLE'];
    try {
      loadNccl(['/nonexistent']);
      t.skip('an NCCL library is installed here');
      return;
    } catch (e) {
      assert.ok(isTandemError(e) && e.code === 'TANDEM_ERR_UNSUPPORTED', String(e));
      assert.match((e as Error).message, /libnccl\.so\.2/);
    } finally {
      assert.equal(process.env['NCCL_NVLS_ENABLE'], '0');
      if (saved !== undefined) process.env['NCCL_NVLS_ENABLE'] = saved;
    }
  });

  void it('maps dtypes to ncclDataType_t and refuses the ones NCCL lacks', () => {
    assert.equal(ncclDtype('f32'), 7);
    assert.equal(ncclDtype('f16'), 6);
    assert.equal(ncclDtype('bf16'), 9);
    assert.throws(
      () => ncclDtype('u8'),
      (e) => isTandemError(e) && e.code === 'TANDEM_ERR_DTYPE',
    );
  });
});
