export { ljForcesWebGpu } from '../md_common/webgpu.js';
