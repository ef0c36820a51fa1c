export { mdIntegrateDef } from '../md_common/defs.js';
