export { shardedSum, sumPartials, type MultiGpuSum } from './reduce.js';
export { fillTiles, freeTiles, submitGemmTiles, tileDevice, type DeviceTiles } from './tiles.js';
