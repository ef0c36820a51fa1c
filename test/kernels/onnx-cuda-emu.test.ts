/**
 * The ONNX kernels' CUDA implementations executed on the host emulator (cuda-emu/: the real program
 * text, prelude, launch geometry and parameters, one host thread per CUDA thread, ctx.gemm as a
 * float64-sum GEMM) against the float64 references, through the shared conformance cases. One or two
 * cases per program and dtype path: compiling each program is most of the time. The GPU itself runs
 * every case in test/gpu/cuda-conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HostArray, hostView } from '../../src/core/dtype.js';
import { numel } from '../../src/core/shape.js';
import type { CudaKernelImpl, CudaNative } from '../../src/devices/cuda/kernel-api.js';
import { CONFORMANCE_CASES, type ConformanceCase } from '../../src/kernels/conformance-cases.js';
import { checkCase, prepareCase } from '../../src/kernels/conformance.js';
import { KERNEL_IMPLS } from '../../src/kernels/register.js';
import { defOf } from './cpu-harness.js';
import { hostCudaUnavailable, runNativeOnHost } from './cuda-emu/host-cuda.js';

const unavailable = hostCudaUnavailable();
if (unavailable) console.log(`# skip onnx CUDA emulation: ${unavailable}`);

function runOnEmulator(c: ConformanceCase): string[] {
  const def = defOf(c.op);
  const prepared = prepareCase(def, c);
  def.validate(prepared.descs, c.scalars);
  const impl = KERNEL_IMPLS.find((e) => e.op === c.op && e.backend === 'cuda')!.impl as CudaKernelImpl;
  const native: CudaNative =
    impl.kind === 'native' ? impl : { kind: 'native', run: (ctx, args, s) => ctx.launch(impl, args, s) };
  const descs = def.args.map((s) => prepared.descs[s.name]!);
  const initial = def.args.map((s) => {
    const a = prepared.initial[s.name]!;
    return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  });
  const { outputs } = runNativeOnHost(native, descs, initial, c.scalars);
  const results: Record<string, HostArray> = {};
  def.args.forEach((s, i) => {
    const d = descs[i]!;
    results[s.name] = hostView(d.dtype, outputs[i]!.buffer, outputs[i]!.byteOffset, numel(d.shape));
  });
  return checkCase(c, prepared, results);
}

/** Exact case names: each CUDA program once in f32, its broadcast/index paths, and a 16-bit dtype. */
const PICKED = [
  'onnx_binary add f32 [2,3,5] [2,3,5]',
  'onnx_binary mul f32 [1,3,1,5] [2,1,4,1]',
  'onnx_binary max bf16 [2,1,2,3,1,2] [2,1,3,2,1]',
  'onnx_unary hard_swish f32',
  'onnx_unary clip f16',
  'onnx_unary gelu f64',
  'onnx_map ocr chain f32',
  'onnx_map all binary f64',
  'onnx_map unary params bf16',
  'onnx_map empty f16',
  'onnx_conv f32 dense 3x3 s2 p1',
  'onnx_conv f64 pointwise 1x1',
  'onnx_conv f16 depthwise 5x5 s2 p2',
  'onnx_conv f32 grouped dilated asymmetric',
  'onnx_conv_transpose f32 3x3 s2 p1 op1 g2 d1x2',
  'onnx_conv f32 dense 3x3 + hard_swish',
  'onnx_conv f16 depthwise 3x3 + clip 0..0.25',
  'onnx_conv_transpose bf16 2x2 s2 + relu',
  'onnx_conv f32 pointwise 1x1 + ocr epilogue',
  'onnx_conv f64 dense 3x3 s2 + ocr epilogue',
  'onnx_conv f32 depthwise 3x3 + leaky_relu + epilogue',
  'onnx_conv_transpose f32 2x2 s2 + ocr epilogue',
  'onnx_conv f32 pointwise 1x1 tf32',
  'onnx_conv f32 dense 3x3 O=40 (im2col GEMM)',
  'onnx_conv f32 dense 3x3 tiles + ocr epilogue',
  'onnx_conv f64 dense 3x3 s2x1 d2 asymmetric tiles',
  'onnx_conv f16 dense 3x3 s2x1 d2 asymmetric tiles',
  'onnx_pool f32 avg 3x3 s2 p1 ceil include-pad',
  'onnx_pool bf16 max 2x3 s2 d2 ceil',
  'onnx_global_pool avg f32 [1,4,300]',
  'onnx_global_pool max f16 [2,3,5,7]',
  'onnx_batchnorm bf16 [2,3,5,7]',
  'onnx_layernorm f32 [3,4,5] axis -2 scale [4,5]',
  'onnx_layernorm f64 [2,700] axis 1 scale [700]',
  'onnx_softmax f32 [3,4,5] axis 1 log',
  'onnx_softmax f16 [2,300] axis 1',
  'onnx_transpose f16 [2,3,4,5,2] perm 2,0,3,1,4',
  'onnx_slice f32 [4,5,6] {"starts":"-1","ends":"-100","axes":"2","steps":"-2"}',
  'onnx_concat i32 [2,3,4] into [2,7,4] axis 1 at 3',
  'onnx_expand u8 [3,1] to [2,3,4]',
  'onnx_gather f32 [2,6,3] indices [4] axis 1',
  'onnx_gather i32 [5,3] indices [2,4] axis 0',
  'onnx_pad f32 constant [2,3,4,5] pads 0,0,1,2,0,0,2,1',
  'onnx_pad f16 reflect [4,6] pads 2,-1,1,3',
  'onnx_pad bf16 edge [2,3,4,5] pads 0,0,1,2,0,0,2,1',
  'onnx_matmul f32 [2,3,4] [4,5]',
  'onnx_matmul f64 [2,3,4] [2,4,5]',
  'onnx_matmul f32 [2,1,3,4] [3,4,2]',
  'onnx_gemm f32 bias [M,1] transA alpha beta',
  'onnx_gemm f64 beta 0 ignores a NaN C',
  'onnx_resize f32 nearest asymmetric floor 2x',
  'onnx_resize f16 nearest tf_half_pixel_for_nn round_prefer_ceil',
  'onnx_resize f32 linear half_pixel 2x',
  'onnx_resize bf16 linear asymmetric scales 2.5x1.5',
  'onnx_resize f32 cubic half_pixel up',
  'onnx_resize f64 cubic A -0.5 exclude_outside down',
  'onnx_resize f16 cubic asymmetric scales 1.7x2.2',
  'onnx_resize f32 linear tf_crop_and_resize',
  'onnx_resize f32 nearest tf_crop_and_resize',
  'onnx_grid_sample f32 nearest reflection',
  'onnx_grid_sample f32 linear zeros',
  'onnx_grid_sample f32 linear border align_corners',
  'onnx_grid_sample f32 cubic zeros align_corners',
  'onnx_grid_sample f64 cubic reflection',
  'onnx_grid_sample f16 linear border align_corners',
  'onnx_grid_sample bf16 nearest zeros',
  'onnx_roi_align f32 avg ratio 2 scale 1',
  'onnx_roi_align f32 max half_pixel ratio 2 scale 1',
  'onnx_roi_align f64 avg ratio 0 scale 0.5',
  'onnx_roi_align bf16 avg half_pixel ratio 2 scale 0.5',
  'onnx_maxpool_indices f32 3x3 s2 p1 ceil',
  'onnx_maxpool_indices bf16 2x2 d2 column-major',
  'onnx_det f32 [2,4,4]',
  'onnx_det f64 [7,7]',
  'onnx_det bf16 [5,1,1]',
  'onnx_reduce mean f32 [3,4,5] {"axes":"0,2","keepdims":false}',
  'onnx_reduce log_sum_exp f32 [2,300] {"axes":"-1","keepdims":false}',
  'onnx_reduce max f16 [2,3,2,2,3,2] {"axes":"1,3,4"}',
  'onnx_reduce l2 f64 [2,3,4] {"axes":""}',
  'onnx_unary round f32',
  'onnx_unary thresholded_relu bf16',
  'onnx_unary acosh f32',
  'onnx_unary asinh f16',
  'onnx_unary atanh f64',
  'onnx_unary cosh f32',
  'onnx_map new unary f32',
  'onnx_argreduce max f32 [3,4,5] {"axis":1}',
  'onnx_argreduce min f16 [4,3,2] {"axis":0,"selectLastIndex":true}',
  'onnx_argreduce max i32 [2,300] {"axis":-1,"keepdims":false}',
  'onnx_argreduce min u8 [3,2,1,2,2,3] {"axis":-6,"keepdims":false,"selectLastIndex":true}',
  'onnx_argreduce max f32 all NaN last',
  'onnx_gather_elements f32 [3,4,5] indices [3,6,5] axis 1',
  'onnx_gather_elements i32 [3,4,5] indices [2,3,2] axis -1',
  'onnx_gather_elements bf16 [2,3,2,4] indices [2,3,1,4] axis 2',
  'onnx_trilu f32 [2,3,5,4] {"upper":false,"k":-1}',
  'onnx_trilu bf16 [3,6] {"k":2}',
  'onnx_trilu i32 [3,5] {"k":-7}',
  'onnx_cumsum f32 [3,4,5] {"axis":1,"exclusive":true}',
  'onnx_cumsum f16 [2,300] {"axis":1,"exclusive":true,"reverse":true}',
  'onnx_cumsum f64 [7] {}',
  'onnx_cumsum i32 [3,4,5] {"axis":-1,"reverse":true}',
  'onnx_unary sinh f32',
  'onnx_unary floor f16',
  'onnx_unary ceil f64',
  'onnx_unary sign bf16',
  'onnx_unary shrink f32',
  'onnx_compare less f32 [2,1,5] [3,1]',
  'onnx_compare equal i32 [2,3,5] [2,3,5]',
  'onnx_compare greater_equal f16 [] [3,4]',
  'onnx_compare xor u8 [1,3,1,5] [2,1,4,1]',
  'onnx_isinf isinf negative f32',
  'onnx_isinf isnan bf16',
  'onnx_where f32 [3,1] [2,1,5] [5]',
  'onnx_where i32 [2,1,4,1] [1,3,1,5] [2,3,4,5]',
  'onnx_where f16 [] [3,4] [1]',
  'onnx_hardmax f32 [3,4,5] axis 1',
  'onnx_hardmax bf16 [4,3,2] axis 0 ties',
  'onnx_hardmax f64 [3,5] axis -1 all NaN',
  'onnx_onehot i32 -> f32 [2,3,2] depth 4 axis 1',
  'onnx_onehot f32 -> i32 [2,3] depth 5 axis -1',
  'onnx_onehot u8 -> bf16 [] depth 6 axis 0',
  'onnx_topk f32 [3,4,5] {"k":2,"axis":1}',
  'onnx_topk f16 [2,300] {"k":7,"largest":false}',
  'onnx_topk i32 [4,3,2] {"k":4,"axis":0} ties',
  'onnx_topk f64 [3,4] {"k":3} specials',
  'onnx_topk bf16 [3,4] {"k":4,"largest":false} specials',
  'onnx_gather_nd f32 [3,4,5] indices [2,2,1] batchDims 0',
  'onnx_gather_nd i32 [2,3,4,5] indices [2,3,2] batchDims 1',
  'onnx_gather_nd f16 [5,6] indices [2] batchDims 0',
  'onnx_scatter_elements none f32 [3,4] indices [5,4] axis 0',
  'onnx_scatter_elements add f16 [2,3,5] indices [2,2,7] axis -1',
  'onnx_scatter_elements max i32 [4,3,2,2] indices [2,3,1,2] axis 1',
  'onnx_scatter_nd none bf16 [3,4,5] indices [2,3,2]',
  'onnx_scatter_nd mul f64 [4,5] indices [6,1]',
  'onnx_scatter_nd min u8 [3,4] indices [5,2]',
];
const cases = PICKED.map((name) => CONFORMANCE_CASES.find((c) => c.name === name));

void describe('onnx kernels on the CUDA host emulator', { skip: unavailable ?? false }, () => {
  void it('finds every picked case', () =>
    assert.deepEqual(
      cases.map((c) => c?.name),
      PICKED,
    ));
  for (const c of cases) if (c) void it(c.name, () => assert.deepEqual(runOnEmulator(c), []));
});
