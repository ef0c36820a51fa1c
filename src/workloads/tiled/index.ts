export {
  choleskyGraph,
  gemmGraph,
  opCounts,
  setCriticalPathPriorities,
  type TileGraph,
  type TileTask,
} from './graph.js';
export { submitCholesky, submitTiledGemm, type TiledRun, type TiledRunOptions } from './cholesky.js';
export { checkTiling, readTiles, spdValue, tileMatrix, type TileMatrix } from './tiles.js';
