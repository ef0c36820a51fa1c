export { mcEuropeanCuda } from '../mc_common/cuda.js';
