export { mdNeighborsCpu } from '../md_common/cpu.js';
