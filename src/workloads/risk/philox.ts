/** The Philox generator lives with the kernels that use it (layering: workloads build on kernels). */
export * from '../../kernels/mc_common/philox.js';
