export { mdNeighborsCuda } from '../md_common/cuda.js';
