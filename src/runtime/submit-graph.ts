/**
 * Submitting a whole graph with explicit dependencies by id. The graph is checked before anything is
 * submitted: unknown or duplicate ids and cycles are rejected (TANDEM_ERR_CYCLE names the cycle), so
 * a bad graph never leaves half of its tasks running. Tasks are submitted in a topological order that
 * keeps the caller's order wherever the dependencies allow it (data dependencies follow submission
 * order, so that order is the caller's intent).
 */
import { TandemError } from '../core/errors.js';
import type { SubmitRequest } from './submit.js';
import type { TaskHandle } from './task.js';

export interface GraphNode extends Omit<SubmitRequest, 'deps'> {
  readonly id: string;
  /** Ids of nodes of the same graph (or of `external`) that must finish first. */
  readonly deps?: readonly string[];
}

function bad(msg: string, details: Record<string, unknown> = {}): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', msg, details);
}

/** Returns node indices in topological order, or throws TANDEM_ERR_CYCLE with one cycle. */
export function topologicalOrder(
  nodes: readonly GraphNode[],
  external: ReadonlySet<string> = new Set(),
): number[] {
  if (!Array.isArray(nodes)) throw bad('submitGraph: nodes must be an array');
  const index = new Map<string, number>();
  nodes.forEach((n, i) => {
    if (!n || typeof n.id !== 'string' || n.id === '') throw bad(`submitGraph: node ${i} needs a string id`);
    if (index.has(n.id)) throw bad(`submitGraph: id ${JSON.stringify(n.id)} is used twice`, { id: n.id });
    index.set(n.id, i);
  });
  const succ: number[][] = nodes.map(() => []);
  const indeg = nodes.map(() => 0);
  nodes.forEach((n, i) => {
    if (n.deps !== undefined && !Array.isArray(n.deps))
      throw bad(`submitGraph: deps of ${n.id} must be an array`);
    for (const d of n.deps ?? []) {
      const j = index.get(d);
      if (j === undefined) {
        if (external.has(d)) continue;
        throw bad(`submitGraph: ${n.id} depends on unknown id ${JSON.stringify(d)}`, { id: n.id, dep: d });
      }
      succ[j]!.push(i);
      indeg[i]!++;
    }
  });
  // Kahn's algorithm, always taking the ready node that came first in the caller's list.
  const order: number[] = [];
  const ready: number[] = [];
  indeg.forEach((d, i) => d === 0 && ready.push(i));
  while (ready.length) {
    let m = 0;
    for (let k = 1; k < ready.length; k++) if (ready[k]! < ready[m]!) m = k;
    const i = ready.splice(m, 1)[0]!;
    order.push(i);
    for (const s of succ[i]!) if (--indeg[s]! === 0) ready.push(s);
  }
  if (order.length < nodes.length) throw cycleError(nodes, index, indeg);
  return order;
}

function cycleError(nodes: readonly GraphNode[], index: Map<string, number>, indeg: number[]): TandemError {
  // Walk dependencies among the nodes left over: every one has an unfinished dependency, so the walk
  // must come back to a node it has seen: that loop is the cycle.
  let i = indeg.findIndex((d) => d > 0);
  const seen = new Map<number, number>();
  const path: number[] = [];
  while (!seen.has(i)) {
    seen.set(i, path.length);
    path.push(i);
    const next = (nodes[i]!.deps ?? [])
      .map((d) => index.get(d))
      .find((j) => j !== undefined && indeg[j]! > 0);
    i = next!;
  }
  const cycle = path
    .slice(seen.get(i))
    .map((k) => nodes[k]!.id)
    .reverse();
  cycle.push(cycle[0]!);
  return new TandemError('TANDEM_ERR_CYCLE', `explicit dependencies form a cycle: ${cycle.join(' -> ')}`, {
    cycle,
  });
}

export function submitGraph(
  submit: (req: SubmitRequest) => TaskHandle,
  nodes: readonly GraphNode[],
  external: ReadonlyMap<string, TaskHandle> = new Map(),
): Map<string, TaskHandle> {
  const order = topologicalOrder(nodes, new Set(external.keys()));
  const handles = new Map<string, TaskHandle>(external);
  for (const i of order) {
    const { id, deps, ...req } = nodes[i]!;
    handles.set(id, submit({ ...req, deps: (deps ?? []).map((d) => handles.get(d)!) }));
  }
  for (const k of external.keys()) handles.delete(k);
  return handles;
}
