/**
 * BatchNormalization in training mode (opset 14+): normalized with the batch's own mean and (biased)
 * variance per channel, and the running statistics updated as input·momentum + batch·(1 − momentum).
 * Composed from existing kernels: onnx_reduce means over every axis but the channels (keepdims), the
 * variance as the mean of squared deviations, onnx_batchnorm with those statistics, onnx_map and
 * onnx_binary for the running updates.
 */
import type { Tensor } from '../../memory/tensor.js';
import { numelOf, type HostTensor } from '../host-tensor.js';
import { DeviceOps } from './compose.js';
import type { LowerTarget, OpCall } from './types.js';

export function bnTraining(c: OpCall): boolean {
  return c.attrs.int('training_mode', 0) === 1;
}

/** Per-channel mean and biased variance of [N, C, …] in float64. */
export function bnBatchStats(t: HostTensor): [Float64Array, Float64Array] {
  const ch = t.dims[1]!;
  const inner = numelOf(t.dims.slice(2));
  const count = t.data.length / ch;
  const [mean, variance] = [new Float64Array(ch), new Float64Array(ch)];
  t.data.forEach((v, i) => (mean[Math.floor(i / inner) % ch] += v / count));
  t.data.forEach((v, i) => {
    const k = Math.floor(i / inner) % ch;
    variance[k] += (v - mean[k]!) ** 2 / count;
  });
  return [mean, variance];
}

export function lowerBnTraining(c: OpCall, t: LowerTarget): void {
  const x = t.input(0);
  const o = new DeviceOps(t, x);
  const ch = x.shape[1]!;
  const axes = x.shape.map((_, i) => i).filter((i) => i !== 1);
  const kept = x.shape.map((d, i) => (i === 1 ? d : 1));
  const mean = (v: Tensor) => {
    const y = o.tmp(kept);
    t.submit('onnx_reduce', { x: v, y }, { op: 'mean', axes: axes.join(','), keepdims: true });
    return y;
  };
  const m = mean(x);
  const dev = o.binary('sub', x, m);
  const variance = mean(o.binary('mul', dev, dev));
  const [m1, v1] = [o.reshape(m, [ch]), o.reshape(variance, [ch])];
  t.submit(
    'onnx_batchnorm',
    { x, scale: t.input(1), bias: t.input(2), mean: m1, var: v1, y: t.output(0) },
    { epsilon: c.attrs.float('epsilon', 1e-5) },
  );
  const momentum = c.attrs.float('momentum', 0.9);
  const wanted = (i: number) => (c.node.outputs[i] ?? '') !== '';
  for (const [i, cur] of [
    [1, m1],
    [2, v1],
  ] as const) {
    if (!wanted(i)) continue;
    const old = o.map(`mul(r0, ${momentum})`, t.input(i + 2));
    o.binary('add', old, o.map(`mul(r0, ${1 - momentum})`, cur), t.output(i));
  }
}
