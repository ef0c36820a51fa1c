/**
 * The ONNX kernels on PaddleOCR-detection-like layers at 640x640 (MobileNetV3 backbone kinds: the
 * stride-2 stem, depthwise 3x3 and 5x5, pointwise 1x1, the FPN's nearest 2x upsample and transposed
 * conv, squeeze-excite pooling, hard-swish and per-channel broadcasts) through the runtime with the data
 * resident on the device. One JSON line per (layer, dtype, batch): median milliseconds per call over 5
 * runs of `reps` calls, and the rate in GB/s (bytes read and written once) and GFLOP/s.
 *   node dist/bench/onnx-kernels.js [--device cuda|cpu] [--batch 1,16] [--reps 20]
 */
import { intOption, parse } from '../src/cli/output.js';
import { timeOp, type OpCall } from './op-timing.js';
import { numel } from '../src/core/shape.js';
import { KERNEL_DEFS } from '../src/kernels/register.js';
import { Runtime } from '../src/runtime/runtime.js';

const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cuda' },
  batch: { type: 'string', default: '1,16' },
  reps: { type: 'string' },
});
const device = String(values['device']);
const BATCHES = String(values['batch'])
  .split(',')
  .map((b) => intOption(b, 'batch', 1, 1, 256));
const REPS = intOption(values['reps'], 'reps', device === 'cuda' ? 20 : 2, 1, 10_000);

type Call = OpCall;

function calls(b: number): Call[] {
  const conv = (
    layer: string,
    c: number,
    hw: number,
    o: number,
    k: number,
    s: number,
    group: number,
    act?: string,
  ) => {
    const p = (k - 1) >> 1;
    const out = Math.floor((hw + 2 * p - k) / s) + 1;
    return {
      layer,
      op: 'onnx_conv',
      args: { x: [b, c, hw, hw], w: [o, c / group, k, k], b: [o], y: [b, o, out, out] },
      scalars: {
        group,
        strides: `${s},${s}`,
        pads: `${p},${p},${p},${p}`,
        ...(act ? { activation: act } : {}),
      },
    };
  };
  return [
    conv('stem 3x3 s2 3->16 640', 3, 640, 16, 3, 2, 1, 'hard_swish'),
    conv('depthwise 3x3 16 320', 16, 320, 16, 3, 1, 16, 'relu'),
    conv('pointwise 16->64 160', 16, 160, 64, 1, 1, 1, 'relu'),
    conv('pointwise 64->24 160', 64, 160, 24, 1, 1, 1),
    conv('depthwise 5x5 s2 96 80', 96, 80, 96, 5, 2, 96, 'hard_swish'),
    conv('dense 3x3 96->96 40', 96, 40, 96, 3, 1, 1),
    {
      layer: 'conv transpose 2x2 s2 24->24 160',
      op: 'onnx_conv_transpose',
      args: { x: [b, 24, 160, 160], w: [24, 24, 2, 2], b: [24], y: [b, 24, 320, 320] },
      scalars: { strides: '2,2', activation: 'relu' },
    },
    {
      layer: 'resize nearest 2x 96 80',
      op: 'onnx_resize',
      args: { x: [b, 96, 80, 80], y: [b, 96, 160, 160] },
      scalars: { mode: 'nearest', coordinateTransformationMode: 'asymmetric', nearestMode: 'floor' },
    },
    {
      layer: 'global avg pool 96 80',
      op: 'onnx_global_pool',
      args: { x: [b, 96, 80, 80], y: [b, 96, 1, 1] },
      scalars: { op: 'avg' },
    },
    {
      layer: 'mul per-channel 96 80',
      op: 'onnx_binary',
      args: { a: [b, 96, 80, 80], b: [b, 96, 1, 1], c: [b, 96, 80, 80] },
      scalars: { op: 'mul' },
    },
    {
      layer: 'add same-shape 24 160',
      op: 'onnx_binary',
      args: { a: [b, 24, 160, 160], b: [b, 24, 160, 160], c: [b, 24, 160, 160] },
      scalars: { op: 'add' },
    },
    {
      layer: 'hard_swish 16 320',
      op: 'onnx_unary',
      args: { x: [b, 16, 320, 320], y: [b, 16, 320, 320] },
      scalars: { op: 'hard_swish' },
    },
    {
      layer: 'concat part 24 of 96 at 160',
      op: 'onnx_concat',
      args: { x: [b, 24, 160, 160], y: [b, 96, 160, 160] },
      scalars: { axis: 1, offset: 24 },
    },
  ];
}

const rt = await Runtime.create({
  backends: device === 'cuda' ? ['cpu', 'cuda'] : ['cpu'],
  calibrate: false,
});
try {
  if (!rt.devices.some((d) => d.info.kind === device)) {
    console.log(
      JSON.stringify({
        skipped: `no ${device} device`,
        backends: rt.backends.map((b) => [b.kind, b.reason]),
      }),
    );
  } else {
    for (const dtype of ['f32', 'f16'] as const)
      for (const b of BATCHES)
        for (const call of calls(b)) {
          const ms = await timeOp(rt, call, dtype, device, REPS);
          const def = KERNEL_DEFS.find((d) => d.name === call.op)!;
          const descs = Object.fromEntries(
            Object.entries(call.args).map(([n, shape]) => [
              n,
              { shape, dtype, bytes: numel(shape) * (dtype === 'f32' ? 4 : 2) },
            ]),
          );
          const cost = def.cost(descs, call.scalars);
          const gbs = cost.bytes / ms / 1e6;
          const gflops = cost.flops / ms / 1e6;
          console.log(
            JSON.stringify({ device, layer: call.layer, op: call.op, dtype, batch: b, ms, gbs, gflops }),
          );
        }
  }
} finally {
  await rt.close();
}
