export { ljForcesCpu } from '../md_common/cpu.js';
