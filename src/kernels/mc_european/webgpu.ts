export { mcEuropeanWebGpu } from '../mc_common/webgpu.js';
