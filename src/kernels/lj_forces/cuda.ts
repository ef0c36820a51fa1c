export { ljForcesCuda } from '../md_common/cuda.js';
