/**
 * A runtime seen through a share group: the same runtime (same tensors, devices, scheduler), except
 * that every task submitted through it that names no group of its own is charged to `group`. A
 * service hands each job such a view of its one runtime, so library code (the workloads) shares
 * devices by tenant without knowing about tenants.
 */
import type { ShareGroup } from './shares.js';
import type { SubmitRequest } from './submit.js';
import type { GraphNode } from './submit-graph.js';
import type { SequenceRequest } from './sequence.js';

/** A graph node with the view's group (graphs are submitted rarely: a copy per node is fine). */
function tagged<T extends { readonly share?: SubmitRequest['share'] }>(req: T, group: ShareGroup): T {
  return req !== null && typeof req === 'object' && req.share === undefined ? { ...req, share: group } : req;
}

/** What a view needs of the runtime (structural, so this module does not import runtime.ts). */
export interface ShareHost {
  submitCharged(req: SubmitRequest, group: ShareGroup): unknown;
  submitGraph(nodes: readonly GraphNode[]): unknown;
  submitSequenceCharged(req: SequenceRequest, group: ShareGroup): unknown;
  prepareSequenceCharged(req: SequenceRequest, group: ShareGroup): unknown;
}

export function shareView<R extends ShareHost>(rt: R, group: ShareGroup): R {
  const submit = (req: SubmitRequest): unknown => rt.submitCharged(req, group);
  const submitSequence = (req: SequenceRequest): unknown => rt.submitSequenceCharged(req, group);
  const prepareSequence = (req: SequenceRequest): unknown => rt.prepareSequenceCharged(req, group);
  const submitGraph = (nodes: readonly GraphNode[]): unknown =>
    rt.submitGraph(Array.isArray(nodes) ? nodes.map((n: GraphNode) => tagged(n, group)) : nodes);
  // Methods run on the runtime itself (bound once per view), never on the proxy: tensors made through
  // the view belong to the runtime, and its own fields are read without a trap.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(rt, {
    get(target, prop) {
      if (prop === 'submit') return submit;
      if (prop === 'submitGraph') return submitGraph;
      if (prop === 'submitSequence') return submitSequence;
      if (prop === 'prepareSequence') return prepareSequence;
      if (prop === 'share') return group;
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      let b = bound.get(prop);
      if (b === undefined) bound.set(prop, (b = (v as (...a: unknown[]) => unknown).bind(target)));
      return b;
    },
  });
}
