/** dropout_backward on CUDA: dropout's program with accumulate read from the scalars (dropout/cuda.ts). */
export { dropoutBackwardCuda } from '../dropout/cuda.js';
