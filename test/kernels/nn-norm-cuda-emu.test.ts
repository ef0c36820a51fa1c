/**
 * The norm group's CUDA kernels executed on the host emulator (cuda-emu/: g++, one thread per CUDA
 * thread, barriers for __syncthreads and shuffles, atomics under a lock): the real kernel text, launch
 * geometry, parameters and vector-width choice, checked against the float64 references exactly as the
 * conformance test checks a backend. A representative subset of the conformance cases (every op, the
 * scalar and the 16-byte vector paths, f32/f64/bf16/f16 where the code differs), since each variant is
 * a g++ build, plus the model-size cases of the GPU test but its million-element dropout. The GPU tests (cuda-conformance, nn-norm-cuda) check the hardware itself.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostView } from '../../src/core/dtype.js';
import type { CudaKernelImpl, CudaNative } from '../../src/devices/cuda/kernel-api.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { KERNEL_IMPLS } from '../../src/kernels/register.js';
import { defOf } from './cpu-harness.js';
import { NN_NORM_GPU_CASES } from './nn-norm-gpu-cases.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip norm CUDA emulation: ${unavailable}`);

const CASES = [
  'layernorm f32 [7,77]',
  'layernorm f64 [2,3,129]',
  'layernorm bf16 [3,5,264]',
  'residual_layernorm f16 [3,5,264]',
  'residual_layernorm f32 [7,77]',
  'layernorm_backward f32 [3,5,264] accumulate true accumulateDx true',
  'layernorm_backward bf16 [7,77] accumulate false accumulateDx false',
  'layernorm_backward f64 [2,3,129] accumulate true accumulateDx false',
  'embedding bf16 B3 T5 C33 V11',
  'embedding_backward f32 B3 T5 C33 V11 accumulate false',
  'embedding_backward bf16 B3 T5 C33 V11 accumulate true',
  'softmax_xent f32 [31,8] V5 backward true',
  'softmax_xent bf16 [13,80] V77 backward true',
  'softmax_xent f64 [13,80] V77 backward false',
  'softmax_xent f32 [9,67] V61 wide backward true',
  'softmax_xent_scaled f16 [13,80] V77 scale 65536',
  'softmax_xent_scaled f32 [31,8] V5 scale 0.25',
  'dropout f32 [3,5,7] {"p":0.5,"seed":1099511627783,"offset":6}',
  'dropout_backward bf16 [4099] {"p":0.3,"seed":12345} accumulate true',
  // Model sizes: C = 768 vectors, 38 blocks of column partials, 1024-thread rows of 50304, repeated ids.
  ...NN_NORM_GPU_CASES.filter((c) => c.op !== 'dropout').map((c) => c.name),
];
const ALL = [...CONFORMANCE_CASES, ...NN_NORM_GPU_CASES];

function asNative(impl: CudaKernelImpl): CudaNative {
  return impl.kind === 'native' ? impl : { kind: 'native', run: (ctx, a, s) => ctx.launch(impl, a, s) };
}

void describe('norm group CUDA kernels on the host emulator', { skip: unavailable ?? false }, () => {
  for (const name of CASES) {
    void it(name, () => {
      const c = ALL.find((x) => x.name === name);
      assert.ok(c, `no case named ${name}`);
      const def = defOf(c.op);
      const prepared = prepareCase(def, c);
      def.validate(prepared.descs, c.scalars);
      const impl = KERNEL_IMPLS.find((e) => e.op === c.op && e.backend === 'cuda')!.impl as CudaKernelImpl;
      const descs = def.args.map((s) => prepared.descs[s.name]!);
      const initial = def.args.map((s) => {
        const a = prepared.initial[s.name]!;
        return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      });
      const { outputs } = runNativeOnHost(asNative(impl), descs, initial, c.scalars);
      const results = Object.fromEntries(
        def.args.map((s, i) => {
          const d = descs[i]!;
          const n = d.shape.reduce((x, y) => x * y, 1);
          return [s.name, hostView(d.dtype, Uint8Array.from(outputs[i]!).buffer, 0, n)];
        }),
      );
      assert.deepEqual(checkCase(c, prepared, results), []);
    });
  }
});
