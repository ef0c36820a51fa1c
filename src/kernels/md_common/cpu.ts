/** CPU implementations of the MD ops (worker threads, typed views of shared buffers). */
import type { CpuKernel } from '../../devices/cpu/kernel-api.js';
import { boolScalar, intScalar, numberScalar } from '../common/scalars.js';
import { boxOf, listFlags } from './defs.js';
import { buildFixedList, integrate, ljForcesFixed, type Real } from './fixed.js';

export const mdNeighborsCpu: CpuKernel = (args, s) => {
  const { half, transposed } = listFlags('md_neighbors', s);
  buildFixedList(
    args[0]!.data as Real,
    boxOf('md_neighbors', s),
    numberScalar('md_neighbors', s, 'range'),
    half,
    transposed,
    args[1]!.data as Int32Array,
    args[2]!.data as Int32Array,
    args[3]!.data as Int32Array,
  );
};

export const ljForcesCpu: CpuKernel = (args, s) => {
  const { half, transposed } = listFlags('lj_forces', s);
  ljForcesFixed(
    args[0]!.data as Real,
    args[3]!.data as Real,
    args[4]!.data as Real,
    boxOf('lj_forces', s),
    args[1]!.data as Int32Array,
    args[2]!.data as Int32Array,
    numberScalar('lj_forces', s, 'cutoff'),
    boolScalar('lj_forces', s, 'shift', false),
    half,
    transposed,
  );
};

export const mdIntegrateCpu: CpuKernel = (args, s) => {
  const stage = intScalar('md_integrate', s, 'stage') === 1 ? 1 : 2;
  integrate(
    args[0]!.data as Real,
    args[1]!.data as Real,
    args[2]!.data as Real,
    numberScalar('md_integrate', s, 'dt'),
    stage,
  );
};
