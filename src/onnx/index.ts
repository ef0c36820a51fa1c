/** ONNX import (issue 17): the loader, the planner, the executor on runtime tasks, and the checks. */
export {
  loadOnnxFile,
  parseOnnxModel,
  MIN_OPSET,
  MAX_OPSET,
  type OnnxModel,
  type OnnxNode,
  type ValueInfo,
} from './model.js';
export {
  OnnxExecutor,
  type InputTensor,
  type OnnxRuntime,
  type OutputTensor,
  type RunOptions,
} from './executor.js';
export { evaluateReference } from './reference.js';
export { ONNX_OPS, deviceOps } from './ops/table.js';
export { runNodeTests, SKIPPED_NODE_TESTS, type NodeTestSummary } from './node-tests.js';
export {
  ctcGreedyDecode,
  ocrAssetsDir,
  ocrCharacters,
  OCR_DET_MODEL,
  OCR_REC_MODEL,
  OCR_DICTIONARY,
} from './ocr.js';
