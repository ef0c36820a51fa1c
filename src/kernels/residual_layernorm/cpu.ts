import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { type FloatArray, floatCopyOf, isHalf, storeFloat } from '../common/cpu-float.js';
import { layernormRowsCpu, outputView } from '../layernorm/cpu.js';
import { epsScalar } from '../common/norm-checks.js';
import { decodeHalf } from '../common/cpu-float.js';

export const residualLayernormCpu: CpuKernel = (args, scalars) => {
  const [aA, rA, sA, wA, bA, yA, meanA, rstdA] = args;
  const a = floatCopyOf(aA!);
  const r = floatCopyOf(rA!);
  const s = outputView(sA!);
  for (let i = 0; i < s.length; i++) s[i] = a[i]! + r[i]!;
  storeFloat(sA!, s);
  // Normalize the stored (rounded) sum, so y matches layernorm of s exactly as the next op sees it.
  if (isHalf(sA!.desc.dtype)) decodeHalf(sA!.desc.dtype, sA!.data as Uint16Array, s as Float32Array);
  const cols = aA!.desc.shape[aA!.desc.shape.length - 1]!;
  const y = outputView(yA!);
  layernormRowsCpu(
    s,
    floatCopyOf(wA!),
    floatCopyOf(bA!),
    y,
    meanA!.data as FloatArray,
    rstdA!.data as FloatArray,
    cols,
    epsScalar('residual_layernorm', scalars),
  );
  storeFloat(yA!, y);
};
