/**
 * Every WGSL variant the built-in kernels can generate must compile — f16 ones included, which the
 * llvmpipe adapter cannot run (no shader-f16). Dawn's null backend validates WGSL through Tint with
 * every feature on and executes nothing, so this checks here what the H200 will compile.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { DType } from '../../src/core/dtype.js';
import type { Scalars, TensorDesc } from '../../src/devices/device.js';
import type { WebGpuKernel } from '../../src/devices/webgpu/kernel-api.js';
import { axpyWebGpu } from '../../src/kernels/axpy/webgpu.js';
import { BINARY_OPS } from '../../src/kernels/binary/ops.js';
import { binaryWebGpu } from '../../src/kernels/binary/webgpu.js';
import { castWebGpu } from '../../src/kernels/cast/webgpu.js';
import { fillWebGpu } from '../../src/kernels/fill/webgpu.js';
import { GEMM_LARGE, GEMM_SMALL, makeGemmWebGpu } from '../../src/kernels/gemm/webgpu.js';
import { REDUCE_OPS } from '../../src/kernels/reduce/params.js';
import { reduceWebGpu } from '../../src/kernels/reduce/webgpu.js';
import { scaleWebGpu } from '../../src/kernels/scale/webgpu.js';
import { UNARY_OPS } from '../../src/kernels/unary/ops.js';
import { unaryWebGpu } from '../../src/kernels/unary/webgpu.js';
import { ACT_OPS } from '../../src/kernels/activation/ops.js';
import { activationWebGpu } from '../../src/kernels/activation/webgpu.js';
import { activationBackwardWebGpu } from '../../src/kernels/activation_backward/webgpu.js';
import { linearActWebGpu, linearWebGpu } from '../../src/kernels/linear/webgpu.js';
import { linearDwWebGpu } from '../../src/kernels/linear_dw/webgpu.js';
import { linearDxActWebGpu } from '../../src/kernels/linear_dx_act/webgpu.js';
import { MAP_PROGRAMS } from '../../src/kernels/onnx/elementwise-group.js';
import { parseMapProgram } from '../../src/kernels/onnx/map-program.js';
import { mapWgslSupported, onnxMapWebGpu } from '../../src/kernels/onnx/webgpu-map.js';
import { UNARY_OPS as ONNX_UNARY_OPS } from '../../src/kernels/onnx/elementwise-ops.js';
import { onnxUnaryWebGpu } from '../../src/kernels/onnx/webgpu.js';
import { openWebGpu } from './harness.js';

const t = (shape: number[], dtype: DType): TensorDesc => ({
  shape,
  dtype,
  bytes: shape.reduce((x, y) => x * y, 1) * (dtype === 'f16' || dtype === 'bf16' ? 2 : 4),
});

interface Variant {
  readonly name: string;
  readonly kernel: WebGpuKernel;
  readonly args: TensorDesc[];
  readonly scalars: Scalars;
}

function variants(): Variant[] {
  const out: Variant[] = [];
  for (const dtype of ['f32', 'f16', 'bf16'] as const) {
    for (const tiling of [GEMM_LARGE, GEMM_SMALL, { tm: 8, tn: 8, bk: 16 } as const]) {
      for (const [m, k, n] of [
        [64, 64, 64],
        [63, 65, 67],
      ] as const) {
        for (const transA of [false, true])
          for (const transB of [false, true])
            for (const beta of [0, 0.5]) {
              out.push({
                name: `gemm ${dtype} ${tiling.tm}x${tiling.tn}/${tiling.bk} ${m},${k},${n} tA=${transA} tB=${transB} beta=${beta}`,
                kernel: makeGemmWebGpu(tiling),
                args: [
                  t(transA ? [k, m] : [m, k], dtype),
                  t(transB ? [n, k] : [k, n], dtype),
                  t([m, n], dtype),
                ],
                scalars: { alpha: 1, beta, transA, transB },
              });
            }
      }
    }
    const v = [t([100], dtype), t([100], dtype)];
    for (const op of UNARY_OPS)
      out.push({ name: `unary ${op} ${dtype}`, kernel: unaryWebGpu, args: v, scalars: { op } });
    for (const op of BINARY_OPS)
      out.push({ name: `binary ${op} ${dtype}`, kernel: binaryWebGpu, args: [...v, v[0]!], scalars: { op } });
    for (const op of REDUCE_OPS)
      out.push({
        name: `reduce ${op} ${dtype}`,
        kernel: reduceWebGpu,
        args: [t([4, 25], dtype), t([4], dtype)],
        scalars: { op, axis: 1 },
      });
    out.push({ name: `axpy ${dtype}`, kernel: axpyWebGpu, args: v, scalars: { alpha: 2 } });
    out.push({ name: `scale ${dtype}`, kernel: scaleWebGpu, args: [v[0]!], scalars: { alpha: 2 } });
    out.push({ name: `fill ${dtype}`, kernel: fillWebGpu, args: [v[0]!], scalars: { value: 1.5 } });
    // The linear group (x [5,3], w [4,3], b [4], y/pre [5,4]): its own steps around the gemm WGSL.
    const [x, w, b, y] = [t([5, 3], dtype), t([4, 3], dtype), t([4], dtype), t([5, 4], dtype)];
    out.push({ name: `linear ${dtype}`, kernel: linearWebGpu, args: [x, w, b, y], scalars: {} });
    for (const act of ACT_OPS) {
      out.push({
        name: `linear_act ${act} ${dtype}`,
        kernel: linearActWebGpu,
        args: [x, w, b, y, y],
        scalars: { act },
      });
      out.push({
        name: `linear_dx_act ${act} ${dtype}`,
        kernel: linearDxActWebGpu,
        args: [y, w, x, x],
        scalars: { act },
      });
      out.push({
        name: `activation ${act} ${dtype}`,
        kernel: activationWebGpu,
        args: v,
        scalars: { op: act },
      });
      for (const accumulate of [false, true])
        out.push({
          name: `activation_backward ${act} ${dtype} accumulate=${accumulate}`,
          kernel: activationBackwardWebGpu,
          args: [...v, v[0]!],
          scalars: { op: act, accumulate },
        });
    }
    for (const accumulate of [false, true])
      out.push({
        name: `linear_dw ${dtype} accumulate=${accumulate}`,
        kernel: linearDwWebGpu,
        args: [y, x, w, b],
        scalars: { accumulate },
      });
  }
  for (const from of ['f32', 'f16', 'bf16', 'i32'] as const)
    for (const to of ['f32', 'f16', 'bf16', 'i32'] as const)
      if (from !== to)
        out.push({
          name: `cast ${from}->${to}`,
          kernel: castWebGpu,
          args: [t([10], from), t([10], to)],
          scalars: {},
        });
  for (const [from, to] of [
    ['f32', 'f64'],
    ['f64', 'f32'],
  ] as const)
    out.push({
      name: `cast ${from}->${to}`,
      kernel: castWebGpu,
      args: [t([10], from), t([10], to)],
      scalars: {},
    });
  // onnx_map's generated program functions in every storage (native f16 cannot run on llvmpipe).
  for (const dtype of ['f32', 'f16', 'bf16'] as const)
    for (const [label, program] of MAP_PROGRAMS)
      if (mapWgslSupported(parseMapProgram('onnx_map', program)))
        out.push({
          name: `onnx_map ${label} ${dtype}`,
          kernel: onnxMapWebGpu,
          args: [t([2, 3, 5], dtype), t([2, 3, 5], dtype)],
          scalars: { program },
        });
  // onnx_unary in every storage: the ops with helper functions (webgpu-math.ts) under native f16 too.
  for (const dtype of ['f32', 'f16', 'bf16'] as const)
    for (const op of ONNX_UNARY_OPS)
      out.push({
        name: `onnx_unary ${op} ${dtype}`,
        kernel: onnxUnaryWebGpu,
        args: [t([2, 3, 5], dtype), t([2, 3, 5], dtype)],
        scalars: { op },
      });
  return out;
}

const opened = await openWebGpu({ backends: ['null'] });
const skip = opened.ok ? false : `Dawn's null backend is unavailable: ${opened.ok ? '' : opened.reason}`;
if (!opened.ok) console.log(`# ${skip}`);

void describe('every generated WGSL variant compiles (Dawn null backend, all features)', { skip }, () => {
  if (!opened.ok) return;
  const dev = opened.opened.device;
  after(() => dev.close());
  void it('has shader-f16 on the null adapter', () => assert.equal(dev.features.shaderF16, true));
  // Each variant twice: as on an adapter with shader-f16 (native f16) and without (f16 packed in u32).
  for (const v of variants()) {
    for (const shaderF16 of [true, false]) {
      const features = { ...dev.features, shaderF16 };
      const declined = !v.kernel.supports(v.args, v.scalars, features);
      const isF16 = v.args.some((a) => a.dtype === 'f16');
      if (!isF16 && !shaderF16) continue; // same source as with the feature
      const why =
        v.name.startsWith('gemm') && shaderF16
          ? `workgroup memory ${features.maxWorkgroupStorageBytes} B`
          : 'needs shader-f16';
      const name = `${v.name}${isF16 ? (shaderF16 ? ' (native f16)' : ' (packed f16)') : ''}`;
      void it(name, { skip: declined ? `declined here: ${why}` : false }, async () => {
        const steps = v.kernel.plan(v.args, v.scalars, features);
        for (const step of steps) if (step.kind === 'dispatch') await dev.pipelines.get(step);
      });
    }
  }
});
