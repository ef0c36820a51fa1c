export * from '../../kernels/mc_common/black-scholes.js';
