/** Every ONNX kernel group (issue 17), each in src/kernels/onnx/<group>-group.ts; see docs/onnx-kernels.md. */
import type { OpGroup } from './nn/op-group.js';
import { onnxElementwiseGroup } from './onnx/elementwise-group.js';

export const ONNX_GROUPS: readonly OpGroup[] = [onnxElementwiseGroup];
