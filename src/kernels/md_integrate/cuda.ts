export { mdIntegrateCuda } from '../md_common/cuda.js';
