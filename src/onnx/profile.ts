/**
 * Opt-in per-node profile of an ONNX run (RunOptions.profile, or TANDEM_ONNX_PROFILE=1): the executor
 * waits for each step's tasks before it submits the next one, so a step's time is its own — host-side
 * lowering and submission, launches, device work and completion — not overlapped with its neighbours.
 * That serialisation makes the profiled run slower than a normal one; the shares are what to read.
 */
import type { DeviceStep, Plan } from './plan.js';

export interface NodeProfile {
  readonly node: string;
  readonly op: string;
  /** Wall time from the start of the step's lowering to the completion of its last task. */
  readonly ms: number;
  /** Of which: lowering and submitting on the host. */
  readonly submitMs: number;
  /** Runtime tasks the step submitted (a native kernel may make several launches inside one). */
  readonly tasks: number;
  readonly inputs: readonly (readonly number[])[];
  readonly output: readonly number[];
}

export interface OpProfile {
  readonly op: string;
  readonly count: number;
  readonly tasks: number;
  readonly ms: number;
  /** Fraction of the profiled run's step time. */
  readonly share: number;
}

export interface OnnxProfile {
  /** Sum of the entries' times: the steps, the inputs' host-side upload and the outputs' read-back. */
  readonly stepsMs: number;
  /** Device steps (not counting the Input/Output entries). */
  readonly steps: number;
  readonly tasks: number;
  /** Per op type (a fused Conv+activation is its own type), slowest first. */
  readonly byOp: readonly OpProfile[];
  /** The slowest nodes, slowest first. */
  readonly top: readonly NodeProfile[];
}

const TOP_NODES = 20;

/** Whether the environment asks for profiles of every run (TANDEM_ONNX_PROFILE=1). */
export function profileFromEnv(): boolean {
  const v = process.env.TANDEM_ONNX_PROFILE;
  return v !== undefined && v !== '' && v !== '0';
}

/**
 * The op type a step is reported under: Conv+relu for a Conv with a fused Relu, Conv+chain with a
 * fused element-wise chain (src/onnx/fuse.ts).
 */
export function stepOpType(step: DeviceStep): string {
  const act = step.call.activation?.op;
  const base = act === undefined ? step.node.opType : `${step.node.opType}+${String(act)}`;
  return step.call.epilogue !== undefined && step.node.opType !== 'ElementwiseChain' ? `${base}+chain` : base;
}

export class StepProfiler {
  private readonly nodes: NodeProfile[] = [];

  constructor(private readonly plan: Plan) {}

  record(step: DeviceStep, ms: number, submitMs: number, tasks: number): void {
    this.nodes.push({
      node: step.node.name,
      op: stepOpType(step),
      ms,
      submitMs,
      tasks,
      inputs: step.node.inputs.filter((n) => n !== '').map((n) => this.plan.values.get(n)?.dims ?? []),
      output: step.outputs[0]?.dims ?? [],
    });
  }

  /** A run's work outside the steps: 'Input' (a graph input's host-side upload), 'Output' (a read-back). */
  recordExtra(name: string, op: 'Input' | 'Output', ms: number, dims: readonly number[]): void {
    this.nodes.push({
      node: name,
      op,
      ms,
      submitMs: ms,
      tasks: op === 'Output' ? 1 : 0,
      inputs: [dims],
      output: dims,
    });
  }

  result(): OnnxProfile {
    const byOp = new Map<string, { count: number; tasks: number; ms: number }>();
    let stepsMs = 0;
    let tasks = 0;
    for (const n of this.nodes) {
      const o = byOp.get(n.op) ?? { count: 0, tasks: 0, ms: 0 };
      o.count++;
      o.tasks += n.tasks;
      o.ms += n.ms;
      byOp.set(n.op, o);
      stepsMs += n.ms;
      tasks += n.tasks;
    }
    return {
      stepsMs,
      steps: this.nodes.filter((n) => n.op !== 'Input' && n.op !== 'Output').length,
      tasks,
      byOp: [...byOp]
        .map(([op, o]) => ({ op, ...o, share: stepsMs > 0 ? o.ms / stepsMs : 0 }))
        .sort((a, b) => b.ms - a.ms),
      top: [...this.nodes].sort((a, b) => b.ms - a.ms).slice(0, TOP_NODES),
    };
  }
}
