/**
 * The kvcache group's CUDA kernels on the host emulator (cuda-emu/: g++, one thread per CUDA thread,
 * barriers and shuffles emulated): the real kernel text, launch geometry and parameters against the
 * float64 references, for every op, both output paths of kv_attention's scalar text (d ≤ 128 and
 * d > 128), its vector text (16-bit, d = 8·2^k) and the 16-bit dtypes. The GPU run (scripts/gpu/serve-gen.sh) checks the hardware itself.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostView } from '../../src/core/dtype.js';
import type { CudaKernelImpl, CudaNative } from '../../src/devices/cuda/kernel-api.js';
import { CONFORMANCE_CASES } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { KERNEL_IMPLS } from '../../src/kernels/register.js';
import { defOf } from './cpu-harness.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip kvcache CUDA emulation: ${unavailable}`);

const CASES = [
  'kv_attention f32 M5 S3 P9 H2 d8',
  'kv_attention bf16 M7 S4 P33 H3 d16',
  'kv_attention f64 M9 S3 P17 H2 d12',
  'kv_attention f16 M3 S2 P5 H1 d160',
  // The vector text (16-bit, d = 8·2^k): 1, 2, 4, 8 and 32 lanes a key, prefixes over several loop trips.
  'kv_attention f16 M5 S3 P9 H2 d8',
  'kv_attention f16 M6 S3 P70 H2 d32',
  'kv_attention bf16 M12 S2 P300 H2 d64',
  'kv_attention bf16 M5 S2 P40 H1 d256',
  'kv_append bf16 M11 S3 P7 C20',
  'kv_append f64 M11 S3 P7 C20',
  'embedding_at f16 M9 V11 P13 C33',
  'gather_rows bf16 M10 R6 C33',
  'topk_rows f32 R4 N300 V290 k17',
  'topk_rows bf16 R3 N50 V47 k5',
  'topk_rows f64 R1 N6 V6 k9',
];

function asNative(impl: CudaKernelImpl): CudaNative {
  return impl.kind === 'native' ? impl : { kind: 'native', run: (ctx, a, s) => ctx.launch(impl, a, s) };
}

void describe('kvcache group CUDA kernels on the host emulator', { skip: unavailable ?? false }, () => {
  for (const name of CASES) {
    void it(name, () => {
      const c = CONFORMANCE_CASES.find((x) => x.name === name);
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
      const { outputs, entries } = runNativeOnHost(asNative(impl), descs, initial, c.scalars);
      if (c.op === 'kv_attention') {
        const d = Number(/ d(\d+)$/.exec(name)![1]);
        const vector = /^kv_attention (f16|bf16) /.test(name) && [8, 16, 32, 64, 128, 256].includes(d);
        assert.deepEqual(entries, [vector ? 'tdm_kv_attention_v8' : 'tdm_kv_attention']);
      }
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
