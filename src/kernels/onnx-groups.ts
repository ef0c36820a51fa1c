/** Every ONNX kernel group (issue 17), each in src/kernels/onnx/<group>-group.ts; see docs/onnx-kernels.md. */
import { imageNormalizeGroup } from './onnx/image-group.js';
import type { OnnxOpGroup } from './onnx/common.js';
import { onnxComputeGroup } from './onnx/compute-group.js';
import { onnxConvGroup } from './onnx/conv-group.js';
import { onnxElementwiseGroup } from './onnx/elementwise-group.js';
import { onnxIndexGroup } from './onnx/index-group.js';
import { onnxLayoutGroup } from './onnx/layout-group.js';
import { onnxLogicGroup } from './onnx/logic-group.js';
import { onnxNormGroup } from './onnx/norm-group.js';
import { onnxSampleGroup } from './onnx/sample-group.js';
import { onnxScatterGroup } from './onnx/scatter-group.js';

export const ONNX_GROUPS: readonly OnnxOpGroup[] = [
  onnxElementwiseGroup,
  onnxConvGroup,
  onnxNormGroup,
  onnxLayoutGroup,
  onnxComputeGroup,
  onnxIndexGroup,
  onnxLogicGroup,
  onnxScatterGroup,
  imageNormalizeGroup,
  onnxSampleGroup,
];
