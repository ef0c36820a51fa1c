/**
 * Every conformance case through the CPU kernels, gemm once per GEMM engine present. An engine that is
 * absent is skipped with its reason.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { wasmGemmStatus } from '../../src/devices/cpu/wasm/gemm-wasm.js';
import { type GemmEngine, OPENBLAS_REASON, runCpuCase } from './cpu-harness.js';

const wasm = wasmGemmStatus();

const ENGINES: readonly { engine: GemmEngine; skip: string | false }[] = [
  { engine: 'ts', skip: false },
  { engine: 'wasm', skip: wasm.reason ?? false },
  { engine: 'openblas', skip: OPENBLAS_REASON ?? false },
];

for (const { engine, skip } of ENGINES) {
  void describe(`cpu conformance, gemm engine ${engine}`, { skip }, () => {
    // The linear ops run their matrix products on the worker's gemm engine too.
    const cases = CONFORMANCE_CASES.filter(
      (c) => engine === 'ts' || c.op === 'gemm' || c.op.startsWith('linear'),
    );
    for (const c of cases) {
      void it(c.name, () => {
        assert.deepEqual(runCpuCase(c, engine), []);
      });
    }
  });
}
