export { mdIntegrateWebGpu } from '../md_common/webgpu.js';
