/**
 * The planned graph's value and step shapes, apart from plan.ts so that the fusion pass (fuse.ts), which
 * plan.ts calls, can name them without an import cycle.
 */
import type { OnnxNode } from './model.js';
import type { OpCall, OpImpl, ValueMeta } from './ops/types.js';

export interface PlannedValue extends ValueMeta {
  /** True when the value depends on no graph input (weights and their folding): cacheable on device. */
  readonly constant: boolean;
}

export interface DeviceStep {
  readonly node: OnnxNode;
  readonly impl: OpImpl;
  readonly call: OpCall;
  readonly outputs: readonly PlannedValue[];
}
