/**
 * The whole graph evaluated in float64 on the host, node by node with the operators' float64
 * evaluations: the reference the executor's device results are compared with (and a way to check the
 * operator semantics on ONNX's own expected outputs).
 */
import { hostTensor, type ElemType, type HostTensor } from './host-tensor.js';
import type { OnnxModel } from './model.js';
import type { InputTensor } from './executor.js';
import { bindPlan, type BoundInput } from './plan.js';

export function evaluateReference(
  model: OnnxModel,
  feeds: Readonly<Record<string, InputTensor>>,
): Record<string, HostTensor> {
  const bound = new Map<string, BoundInput>();
  for (const [name, f] of Object.entries(feeds)) {
    const type: ElemType = f.type ?? model.inputs.find((v) => v.name === name)?.type ?? 'float';
    const host = hostTensor(type, f.dims, f.data);
    bound.set(name, { type, dims: host.dims, host });
  }
  const plan = bindPlan(model, bound, { foldAll: true });
  const out: Record<string, HostTensor> = {};
  for (const o of model.outputs) out[o.name] = plan.values.get(o.name)!.host!;
  return out;
}
