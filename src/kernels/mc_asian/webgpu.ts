export { mcAsianWebGpu } from '../mc_common/webgpu.js';
