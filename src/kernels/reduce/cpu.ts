import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { type ReduceOp, reduceLayout } from './params.js';

/**
 * Accumulates in float64 whatever the dtype (sums of f32 lose less), walking x in memory order: for
 * each outer index, `inner` running accumulators are updated row by row along the reduced axis.
 */
export const reduceCpu: CpuKernel = (args, scalars) => {
  const [xArg, yArg] = args;
  const { op, outer, len, inner } = reduceLayout(xArg!.desc.shape, scalars);
  const x = floatCopyOf(xArg!);
  const y: FloatArray = isHalf(yArg!.desc.dtype)
    ? new Float32Array(outer * inner)
    : (yArg!.data as FloatArray);
  if (inner === 1) {
    reduceRows(op, x, y, outer, len);
    storeFloat(yArg!, y);
    return;
  }
  const acc = new Float64Array(inner);
  for (let o = 0; o < outer; o++) {
    acc.fill(op === 'max' ? -Infinity : 0);
    for (let j = 0; j < len; j++) {
      const base = (o * len + j) * inner;
      if (op === 'max') {
        for (let i = 0; i < inner; i++) {
          const v = x[base + i]!;
          // `!(v <= acc)` also takes NaN, so NaN propagates like Math.max.
          if (!(v <= acc[i]!)) acc[i] = v;
        }
      } else {
        for (let i = 0; i < inner; i++) acc[i]! += x[base + i]!;
      }
    }
    for (let i = 0; i < inner; i++) y[o * inner + i] = op === 'mean' ? acc[i]! / len : acc[i]!;
  }
  storeFloat(yArg!, y);
};

/** The last axis (or everything): each output is one contiguous run, summed in a scalar register. */
function reduceRows(op: ReduceOp, x: FloatArray, y: FloatArray, outer: number, len: number): void {
  for (let o = 0, base = 0; o < outer; o++, base += len) {
    let acc = op === 'max' ? -Infinity : 0;
    if (op === 'max') {
      for (let j = 0; j < len; j++) {
        const v = x[base + j]!;
        if (!(v <= acc)) acc = v;
      }
    } else {
      for (let j = 0; j < len; j++) acc += x[base + j]!;
    }
    y[o] = op === 'mean' ? acc / len : acc;
  }
}
