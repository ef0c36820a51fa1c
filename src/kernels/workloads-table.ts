/**
 * The ops of the scientific and financial workloads (issue 7), gathered so that the flat table in
 * register.ts takes them with one import and two spreads.
 */
import type { KernelDef, KernelImplEntry } from './kernel.js';
import { mcAsianCpu } from './mc_asian/cpu.js';
import { mcAsianCuda } from './mc_asian/cuda.js';
import { mcAsianDef } from './mc_asian/def.js';
import { mcAsianWebGpu } from './mc_asian/webgpu.js';
import { mcEuropeanCpu } from './mc_european/cpu.js';
import { mcEuropeanCuda } from './mc_european/cuda.js';
import { mcEuropeanDef } from './mc_european/def.js';
import { mcEuropeanWebGpu } from './mc_european/webgpu.js';
import { mcEuropeanBatchCpu } from './mc_european_batch/cpu.js';
import { mcEuropeanBatchCuda } from './mc_european_batch/cuda.js';
import { mcEuropeanBatchDef } from './mc_european_batch/def.js';
import { mcVarCpu } from './mc_var/cpu.js';
import { mcVarCuda } from './mc_var/cuda.js';
import { mcVarDef } from './mc_var/def.js';
import { mcVarWebGpu } from './mc_var/webgpu.js';
import { ljForcesCpu } from './lj_forces/cpu.js';
import { ljForcesCuda } from './lj_forces/cuda.js';
import { ljForcesDef } from './lj_forces/def.js';
import { ljForcesWebGpu } from './lj_forces/webgpu.js';
import { mdIntegrateCpu } from './md_integrate/cpu.js';
import { mdIntegrateCuda } from './md_integrate/cuda.js';
import { mdIntegrateDef } from './md_integrate/def.js';
import { mdIntegrateWebGpu } from './md_integrate/webgpu.js';
import { mdNeighborsCpu } from './md_neighbors/cpu.js';
import { mdNeighborsCuda } from './md_neighbors/cuda.js';
import { mdNeighborsDef } from './md_neighbors/def.js';
import { philoxFillCpu } from './philox_fill/cpu.js';
import { philoxFillCuda } from './philox_fill/cuda.js';
import { philoxFillDef } from './philox_fill/def.js';
import { philoxFillWebGpu } from './philox_fill/webgpu.js';

export const WORKLOAD_KERNEL_DEFS: KernelDef[] = [
  mcEuropeanDef,
  mcAsianDef,
  mcEuropeanBatchDef,
  mcVarDef,
  mdNeighborsDef,
  ljForcesDef,
  mdIntegrateDef,
  philoxFillDef,
];

export const WORKLOAD_KERNEL_IMPLS: KernelImplEntry[] = [
  { op: 'mc_european', backend: 'cpu', impl: mcEuropeanCpu },
  { op: 'mc_european', backend: 'cuda', impl: mcEuropeanCuda },
  { op: 'mc_european', backend: 'webgpu', impl: mcEuropeanWebGpu },
  { op: 'mc_european_batch', backend: 'cpu', impl: mcEuropeanBatchCpu },
  { op: 'mc_european_batch', backend: 'cuda', impl: mcEuropeanBatchCuda },
  { op: 'mc_asian', backend: 'cpu', impl: mcAsianCpu },
  { op: 'mc_asian', backend: 'cuda', impl: mcAsianCuda },
  { op: 'mc_asian', backend: 'webgpu', impl: mcAsianWebGpu },
  { op: 'mc_var', backend: 'cpu', impl: mcVarCpu },
  { op: 'mc_var', backend: 'cuda', impl: mcVarCuda },
  { op: 'mc_var', backend: 'webgpu', impl: mcVarWebGpu },
  { op: 'md_neighbors', backend: 'cpu', impl: mdNeighborsCpu },
  { op: 'md_neighbors', backend: 'cuda', impl: mdNeighborsCuda },
  { op: 'lj_forces', backend: 'cpu', impl: ljForcesCpu },
  { op: 'lj_forces', backend: 'cuda', impl: ljForcesCuda },
  { op: 'md_integrate', backend: 'cpu', impl: mdIntegrateCpu },
  { op: 'md_integrate', backend: 'cuda', impl: mdIntegrateCuda },
  { op: 'lj_forces', backend: 'webgpu', impl: ljForcesWebGpu },
  { op: 'md_integrate', backend: 'webgpu', impl: mdIntegrateWebGpu },
  { op: 'philox_fill', backend: 'cpu', impl: philoxFillCpu },
  { op: 'philox_fill', backend: 'cuda', impl: philoxFillCuda },
  { op: 'philox_fill', backend: 'webgpu', impl: philoxFillWebGpu },
];
