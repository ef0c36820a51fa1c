export { mdNeighborsDef } from '../md_common/defs.js';
