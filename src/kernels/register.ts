/**
 * The flat kernel table: every op's definition, and one line per (op, backend) implementation.
 * Adding a backend's version of an op = one file in the op's folder + one line here.
 */
import type { KernelDef, KernelImplEntry } from './kernel.js';
import { axpyDef } from './axpy/def.js';
import { axpyCpu } from './axpy/cpu.js';
import { binaryDef } from './binary/def.js';
import { binaryCpu } from './binary/cpu.js';
import { castDef } from './cast/def.js';
import { castCpu } from './cast/cpu.js';
import { copyDef } from './copy/def.js';
import { copyCpu } from './copy/cpu.js';
import { fillDef } from './fill/def.js';
import { fillCpu } from './fill/cpu.js';
import { gemmDef } from './gemm/def.js';
import { gemmCpu } from './gemm/cpu.js';
import { noopDef } from './noop/def.js';
import { noopCpu } from './noop/cpu.js';
import { reduceDef } from './reduce/def.js';
import { reduceCpu } from './reduce/cpu.js';
import { scaleDef } from './scale/def.js';
import { scaleCpu } from './scale/cpu.js';
import { unaryDef } from './unary/def.js';
import { unaryCpu } from './unary/cpu.js';
import { axpyCuda } from './axpy/cuda.js';
import { binaryCuda } from './binary/cuda.js';
import { castCuda } from './cast/cuda.js';
import { copyCuda } from './copy/cuda.js';
import { fillCuda } from './fill/cuda.js';
import { gemmCuda } from './gemm/cuda.js';
import { noopCuda } from './noop/cuda.js';
import { reduceCuda } from './reduce/cuda.js';
import { scaleCuda } from './scale/cuda.js';
import { unaryCuda } from './unary/cuda.js';

// WebGPU (WGSL) implementations: src/kernels/<op>/webgpu.ts
import { gemmWebGpu } from './gemm/webgpu.js';
import { axpyWebGpu } from './axpy/webgpu.js';
import { scaleWebGpu } from './scale/webgpu.js';
import { unaryWebGpu } from './unary/webgpu.js';
import { binaryWebGpu } from './binary/webgpu.js';
import { reduceWebGpu } from './reduce/webgpu.js';
import { fillWebGpu } from './fill/webgpu.js';
import { copyWebGpu } from './copy/webgpu.js';
import { castWebGpu } from './cast/webgpu.js';
import { noopWebGpu } from './noop/webgpu.js';

// Cholesky tile ops (issue 4): src/kernels/{potrf,trsm,syrk}; CUDA versions go in <op>/cuda.ts
import { potrfDef } from './potrf/def.js';
import { potrfCpu } from './potrf/cpu.js';
import { trsmDef } from './trsm/def.js';
import { trsmCpu } from './trsm/cpu.js';
import { syrkDef } from './syrk/def.js';
import { syrkCpu } from './syrk/cpu.js';
import { potrfCuda } from './potrf/cuda.js';
import { trsmCuda } from './trsm/cuda.js';
import { syrkCuda } from './syrk/cuda.js';

// Workload ops (issue 7: MD and Monte Carlo risk): src/kernels/workloads-table.ts
import { WORKLOAD_KERNEL_DEFS, WORKLOAD_KERNEL_IMPLS } from './workloads-table.js';
// Deep-learning ops (issue 15): src/kernels/nn/<group>.ts
import { NN_GROUPS } from './nn-groups.js';
import { ONNX_GROUPS } from './onnx-groups.js';

export const KERNEL_DEFS: KernelDef[] = [
  gemmDef,
  axpyDef,
  scaleDef,
  unaryDef,
  binaryDef,
  reduceDef,
  fillDef,
  copyDef,
  castDef,
  noopDef,
  potrfDef,
  trsmDef,
  syrkDef,
  ...WORKLOAD_KERNEL_DEFS,
  ...NN_GROUPS.flatMap((g) => g.defs),
  ...ONNX_GROUPS.flatMap((g) => g.defs),
];

export const KERNEL_IMPLS: KernelImplEntry[] = [
  { op: 'gemm', backend: 'cpu', impl: gemmCpu },
  { op: 'axpy', backend: 'cpu', impl: axpyCpu },
  { op: 'scale', backend: 'cpu', impl: scaleCpu },
  { op: 'unary', backend: 'cpu', impl: unaryCpu },
  { op: 'binary', backend: 'cpu', impl: binaryCpu },
  { op: 'reduce', backend: 'cpu', impl: reduceCpu },
  { op: 'fill', backend: 'cpu', impl: fillCpu },
  { op: 'copy', backend: 'cpu', impl: copyCpu },
  { op: 'cast', backend: 'cpu', impl: castCpu },
  { op: 'noop', backend: 'cpu', impl: noopCpu },
  { op: 'potrf', backend: 'cpu', impl: potrfCpu },
  { op: 'trsm', backend: 'cpu', impl: trsmCpu },
  { op: 'syrk', backend: 'cpu', impl: syrkCpu },
  { op: 'gemm', backend: 'webgpu', impl: gemmWebGpu },
  { op: 'axpy', backend: 'webgpu', impl: axpyWebGpu },
  { op: 'scale', backend: 'webgpu', impl: scaleWebGpu },
  { op: 'unary', backend: 'webgpu', impl: unaryWebGpu },
  { op: 'binary', backend: 'webgpu', impl: binaryWebGpu },
  { op: 'reduce', backend: 'webgpu', impl: reduceWebGpu },
  { op: 'fill', backend: 'webgpu', impl: fillWebGpu },
  { op: 'copy', backend: 'webgpu', impl: copyWebGpu },
  { op: 'cast', backend: 'webgpu', impl: castWebGpu },
  { op: 'noop', backend: 'webgpu', impl: noopWebGpu },
  { op: 'gemm', backend: 'cuda', impl: gemmCuda },
  { op: 'axpy', backend: 'cuda', impl: axpyCuda },
  { op: 'scale', backend: 'cuda', impl: scaleCuda },
  { op: 'unary', backend: 'cuda', impl: unaryCuda },
  { op: 'binary', backend: 'cuda', impl: binaryCuda },
  { op: 'reduce', backend: 'cuda', impl: reduceCuda },
  { op: 'fill', backend: 'cuda', impl: fillCuda },
  { op: 'copy', backend: 'cuda', impl: copyCuda },
  { op: 'cast', backend: 'cuda', impl: castCuda },
  { op: 'noop', backend: 'cuda', impl: noopCuda },
  { op: 'potrf', backend: 'cuda', impl: potrfCuda },
  { op: 'trsm', backend: 'cuda', impl: trsmCuda },
  { op: 'syrk', backend: 'cuda', impl: syrkCuda },
  ...WORKLOAD_KERNEL_IMPLS,
  ...NN_GROUPS.flatMap((g) => g.impls),
  ...ONNX_GROUPS.flatMap((g) => g.impls),
];

// Simulated devices (src/devices/sim) run the CPU implementations on their own memory node.
for (const e of KERNEL_IMPLS.slice()) if (e.backend === 'cpu') KERNEL_IMPLS.push({ ...e, backend: 'sim' });
