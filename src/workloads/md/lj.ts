/** The pair kernel lives with the runtime kernels that use it (layering: workloads build on kernels). */
export * from '../../kernels/md_common/lj.js';
