/** Lennard-Jones molecular dynamics (LAMMPS lj units): parameters, presets, the local engine and `runMd`. */
export {
  LAMMPS_LJ,
  MD_PRESETS,
  atomCount,
  cellsForAtoms,
  latticeConstant,
  validateMdParams,
  type MdConfig,
  type MdParams,
} from './params.js';
export { createFcc, createVelocities, RanPark, type MdState } from './lattice.js';
export { initialState, runLocal, type MdHooks, type MdRunStats } from './simulate.js';
export { THERMO_COLUMNS, energyDrift, formatThermo, thermoRow, type ThermoRow } from './thermo.js';
export { runMd, type MdResult } from './run.js';
