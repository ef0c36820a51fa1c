import { poolProgram } from '../pool2d/cuda.js';

/** pool2d_backward on CUDA: one thread per element of dx (x, dy, dx), gathering from its windows. */
export const pool2dBackwardCuda = poolProgram('tdm_pool2d_backward', 'pool2d_backward', 3, 2);
