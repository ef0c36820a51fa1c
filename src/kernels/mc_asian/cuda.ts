export { mcAsianCuda } from '../mc_common/cuda.js';
