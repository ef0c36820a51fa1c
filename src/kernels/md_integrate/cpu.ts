export { mdIntegrateCpu } from '../md_common/cpu.js';
