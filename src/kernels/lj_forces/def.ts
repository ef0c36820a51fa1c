export { ljForcesDef } from '../md_common/defs.js';
