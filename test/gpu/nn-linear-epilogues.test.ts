/**
 * The linear ops on CUDA take cuBLASLt's fused epilogues where they should: for bf16 at a shape whose
 * k and n are multiples of 8, every call that has an epilogue (BIAS, GELU_AUX_BIAS, BIAS into pre for
 * ReLU, DGELU) runs it fused, and the calls without one (ReLU's gradient, accumulating dW) fall back;
 * dW + db takes BGRADB only with TANDEM_LINEAR_DW_FUSED=1 (a GEMM and a column sum were faster at GPT-2's
 * shapes). Every result also passes its conformance check. Skips without a GPU or cuBLASLt.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { linearGroupCases } from '../../src/kernels/nn/linear-cases.js';
import { cudaDevice, runCudaCase } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
const lt = device?.context.cublasLt ?? null;
const skip = device === null ? reason : lt === null ? 'cuBLASLt did not load' : false;
if (skip !== false) console.log(`# skip nn linear epilogues: ${skip}`);

/** Fused cuBLASLt calls each bf16 case makes (0: the gemm + program fallback is expected). */
const EXPECTED_FUSED: Readonly<Record<string, number>> = {
  linear: 1,
  'linear_act gelu': 1,
  'linear_act relu': 1,
  'linear_dx_act gelu': 1,
  'linear_dx_act relu': 0,
  linear_dw: process.env['TANDEM_LINEAR_DW_FUSED'] === '1' ? 1 : 0,
  'linear_dw accumulate': 0,
};

void describe('nn linear: cuBLASLt epilogues on CUDA (bf16, k and n multiples of 8)', { skip }, () => {
  const cases = linearGroupCases().filter((c) => c.name.includes('bf16 m37 k72 n48'));
  void it('finds the cases', () => assert.equal(cases.length, Object.keys(EXPECTED_FUSED).length));
  for (const c of cases) {
    const key = c.name.replace(' bf16 m37 k72 n48', '');
    void it(`${c.name}: ${EXPECTED_FUSED[key] === 1 ? 'fused' : 'fallback'}, and correct`, async () => {
      const before = { ...lt!.epilogueCalls };
      assert.deepEqual(await runCudaCase(device!, c), []);
      assert.equal(lt!.epilogueCalls.fused - before.fused, EXPECTED_FUSED[key], `fused calls for ${c.name}`);
      assert.equal(lt!.epilogueCalls.declined - before.declined, 0, `declined calls for ${c.name}`);
    });
  }
});
