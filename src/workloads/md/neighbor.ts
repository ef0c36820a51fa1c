export * from '../../kernels/md_common/neighbor.js';
