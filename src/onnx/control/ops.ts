/**
 * The ops the interpreter runs itself (subgraphs, sequences, optionals), and the checks that decide, at
 * load, whether a model needs the interpreter and whether every op of every subgraph is one Tandem runs.
 */
import type { OnnxGraph, OnnxModel, OnnxNode } from '../model.js';
import { opImpl } from '../ops/table.js';
import { SUBGRAPH_OPS } from './control-ops.js';
import type { ControlOp } from './host.js';
import { SEQUENCE_OPS } from './sequence-ops.js';

export const CONTROL_OPS: Readonly<Record<string, ControlOp>> = { ...SUBGRAPH_OPS, ...SEQUENCE_OPS };

function eachNode(g: Pick<OnnxGraph, 'nodes'>, visit: (n: OnnxNode) => void): void {
  for (const n of g.nodes) {
    visit(n);
    for (const sub of n.graphs?.values() ?? []) eachNode(sub, visit);
  }
}

/**
 * Every node's operator, in every subgraph, is one Tandem runs: TANDEM_ERR_UNSUPPORTED naming op, domain
 * and opset up front (at registration, at the executor's construction), never part way through a run.
 */
export function checkOperators(model: OnnxModel): void {
  eachNode(model, (n) => {
    if (n.domain === '' && CONTROL_OPS[n.opType]) return;
    opImpl(n.opType, n.domain, model.opset);
  });
}

/** A model with subgraphs, sequence/optional ops or sequence/optional graph values runs on the interpreter. */
export function needsInterpreter(model: OnnxModel): boolean {
  let found = [...model.inputs, ...model.outputs].some((v) => (v.kind ?? 'tensor') !== 'tensor');
  eachNode(model, (n) => {
    found ||= (n.domain === '' && CONTROL_OPS[n.opType] !== undefined) || n.graphs !== undefined;
  });
  return found;
}
