/** The Monte Carlo engine lives with the kernels that run it (layering: workloads build on kernels). */
export * from '../../kernels/mc_common/engine.js';
