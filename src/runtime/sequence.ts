/**
 * Sequences: many kernel calls submitted as one task. The runtime's per-task work — validation of the
 * request, dependency tracking, placement, coherence, dispatch, completion, events and the performance
 * models — is done once for the whole list, and the steps go into one in-order device queue back to
 * back (each step's launch names the previous step, so a failure skips the rest as a chain would).
 *
 * For work whose structure is fixed and whose steps are small, this is where the host time goes: a
 * batch-1 GPT forward is ~90 kernels of a few microseconds each, and per task the runtime costs more
 * than the kernel. Each step is still validated exactly as `submit` validates a task (same errors);
 * the sequence's tensors are the union of its steps', each with the mode the outside world sees: read
 * when a step reads it before any step writes it, written when any step writes it.
 */
import { TandemError, messageText } from '../core/errors.js';
import type { Scalars, ScalarValue } from '../devices/device.js';
import type { AccessMode, Cost, KernelDef } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import { readsFrom, writesTo } from './graph.js';
import type { RegisteredKernel } from './kernel-registry.js';
import { validateSubmit, type SubmitRequest } from './submit.js';
import type { WorkerSlot } from './policies/policy.js';
import type { ShareGroup } from './shares.js';
import type { TaskHandle, TaskKernel } from './task.js';

export interface SequenceStep {
  readonly kernel: string;
  readonly args?: Readonly<Record<string, Tensor>>;
  readonly scalars?: Readonly<Record<string, ScalarValue>>;
}

export interface SequenceRequest {
  readonly steps: readonly SequenceStep[];
  /** A device kind or id; every step runs there (one in-order queue). */
  readonly device?: string;
  readonly name?: string;
  readonly priority?: number;
  readonly deps?: readonly TaskHandle[];
  readonly tags?: Readonly<Record<string, string>>;
  readonly share?: SubmitRequest['share'];
}

/** One step as a queue launches it: its implementation on that kind, its arguments by tensor index. */
export interface SequenceLaunchStep {
  readonly op: string;
  readonly impl: unknown;
  readonly args: readonly number[];
  readonly scalars: Scalars;
}

/** What a sequence task carries as its "implementation" per device kind (the executor checks for it). */
export class SequenceImpl {
  constructor(readonly steps: readonly SequenceLaunchStep[]) {}
}

/** A sequence validated once (Runtime.prepareSequence), submitted again with Runtime.submitPrepared. */
export class PreparedSequence {
  constructor(
    readonly owner: object,
    readonly built: BuiltSequence,
    readonly name: string,
    readonly priority: number,
    readonly constraint: string | null,
    readonly tags: Readonly<Record<string, string>> | undefined,
    readonly share: ShareGroup | null,
  ) {}
}

/** The request-level fields as a submit request without arguments (validated by validateSubmit). */
export function requestFields(req: SequenceRequest, withDeps: boolean): SubmitRequest {
  return {
    kernel: SEQUENCE_REQUEST_DEF.name,
    ...(req.priority === undefined ? {} : { priority: req.priority }),
    ...(req.device === undefined ? {} : { device: req.device }),
    ...(withDeps && req.deps !== undefined ? { deps: req.deps } : {}),
  };
}

/** Step s's implementation inside a sequence's implementation for one kind. */
export function sequenceStepImpl(impl: unknown, s: number): unknown {
  return impl instanceof SequenceImpl ? impl.steps[s]?.impl : undefined;
}

/** The request-level fields (priority, device, deps) are validated as a task without arguments. */
export const SEQUENCE_REQUEST_DEF: KernelDef = Object.freeze({
  name: '__sequence',
  args: [],
  validate: () => undefined,
  cost: () => ({ flops: 0, bytes: 0 }),
});

/** What building a sequence needs of the runtime (structural: no import of runtime.ts). */
export interface SequenceHost {
  readonly kernels: { get(op: string): RegisteredKernel };
  checkTensor(t: unknown, what: string): asserts t is Tensor;
  readonly devices: ReadonlyArray<{ readonly info: { readonly id: string; readonly kind: string } }>;
  modesOf(def: KernelDef, scalars: Scalars): readonly AccessMode[];
}

export interface BuiltSequence {
  readonly kernel: TaskKernel;
  readonly tensors: readonly Tensor[];
  readonly modes: readonly AccessMode[];
  readonly cost: Cost;
  /** Per step: its op, scalars and tensors (for devices that decide per call). */
  readonly calls: readonly SequenceCall[];
}

export interface SequenceCall {
  readonly op: string;
  readonly tensors: readonly Tensor[];
  readonly scalars: Scalars;
}

const MAX_STEPS = 100_000;

function bad(msg: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', msg);
}

/**
 * Validates every step and builds the sequence's kernel: an op `__sequence` whose implementation on a
 * device kind is the list of the steps' implementations there — only kinds that implement every step.
 */
export function buildSequence(host: SequenceHost, req: SequenceRequest): BuiltSequence {
  if (req === null || typeof req !== 'object' || !Array.isArray(req.steps))
    throw bad('submitSequence: steps must be an array');
  if (req.steps.length === 0) throw bad('submitSequence: a sequence needs at least one step');
  if (req.steps.length > MAX_STEPS)
    throw bad(`submitSequence: ${req.steps.length} steps; at most ${MAX_STEPS} in one sequence`);
  const index = new Map<Tensor, number>();
  const tensors: Tensor[] = [];
  const readFirst: boolean[] = [];
  const written: boolean[] = [];
  const registered: RegisteredKernel[] = [];
  const stepArgs: number[][] = [];
  const stepScalars: Scalars[] = [];
  const calls: SequenceCall[] = [];
  let flops = 0;
  let bytes = 0;
  for (let s = 0; s < req.steps.length; s++) {
    const step = req.steps[s]!;
    if (step === null || typeof step !== 'object') throw bad(`submitSequence: step ${s} is not an object`);
    let k: RegisteredKernel;
    try {
      k = host.kernels.get(step.kernel);
    } catch (e) {
      throw prefixed(e, `submitSequence step ${s}`);
    }
    const asRequest = step as SubmitRequest;
    if (
      asRequest.device !== undefined ||
      asRequest.deps !== undefined ||
      asRequest.priority !== undefined ||
      asRequest.share !== undefined ||
      asRequest.tags !== undefined ||
      asRequest.name !== undefined
    ) {
      const key = REQUEST_ONLY.find((k) => asRequest[k] !== undefined);
      throw bad(`submitSequence: step ${s} sets ${key}; it belongs to the sequence, not to a step`);
    }
    let v: ReturnType<typeof validateSubmit>;
    try {
      // A step is a submit request without the request-level fields (refused above): validated as given.
      v = validateSubmit(host, k.def, step);
    } catch (e) {
      throw prefixed(e, `submitSequence step ${s}`);
    }
    const modes = host.modesOf(k.def, v.scalars);
    const args: number[] = [];
    for (let i = 0; i < v.tensors.length; i++) {
      const t = v.tensors[i]!;
      let j = index.get(t);
      if (j === undefined) {
        j = tensors.length;
        index.set(t, j);
        tensors.push(t);
        readFirst.push(false);
        written.push(false);
      }
      const mode = modes[i]!;
      if (readsFrom(mode) && !written[j]) readFirst[j] = true;
      args.push(j);
    }
    // Writes are recorded after the step's reads: a step that reads and writes a tensor reads it first.
    for (let i = 0; i < v.tensors.length; i++) if (writesTo(modes[i]!)) written[args[i]!] = true;
    registered.push(k);
    stepArgs.push(args);
    stepScalars.push(v.scalars);
    calls.push({ op: k.def.name, tensors: v.tensors, scalars: v.scalars });
    flops += v.cost.flops;
    bytes += v.cost.bytes;
  }
  const modes: AccessMode[] = tensors.map((_, j) =>
    readFirst[j] && written[j] ? 'rw' : written[j] ? 'w' : 'r',
  );
  const impls = new Map<string, unknown>();
  // Only kinds with an open device: a list of every step per kind is built for each.
  const open = new Set<string>();
  for (const d of host.devices) open.add(d.info.kind);
  for (const kind of registered[0]!.impls.keys()) {
    if (!open.has(kind) || !registered.every((k) => k.impls.has(kind))) continue;
    const steps = registered.map((k, s) => ({
      op: k.def.name,
      impl: k.impls.get(kind),
      args: stepArgs[s]!,
      scalars: stepScalars[s]!,
    }));
    impls.set(kind, new SequenceImpl(steps));
  }
  // The task's modes are given with it: the definition only names the op (no argument list to build).
  return { kernel: { def: SEQUENCE_REQUEST_DEF, impls }, tensors, modes, cost: { flops, bytes }, calls };
}

/** Fields of a submit request that only the sequence as a whole may set. */
const REQUEST_ONLY = ['device', 'deps', 'priority', 'share', 'tags', 'name'] as const;

/** The same error (code, details) with the step named first. */
function prefixed(e: unknown, where: string): unknown {
  if (!(e instanceof TandemError)) return e;
  return new TandemError(e.code, `${where}: ${messageText(e)}`, { ...e.details, step: where }, { cause: e });
}

/**
 * The workers a sequence may run on: their kind implements every step, their device is not lost, the
 * constraint allows them, and a device that decides per call (`supports`) takes every step.
 */
export function sequenceEligible(
  seq: BuiltSequence,
  constraint: string | null,
  workers: readonly WorkerSlot[],
  lost: ReadonlyMap<string, unknown>,
): readonly number[] {
  const out: number[] = [];
  for (const w of workers) {
    const info = w.device.info;
    const impl = seq.kernel.impls.get(info.kind);
    if (impl === undefined || lost.has(info.id)) continue;
    const unavailable = w.device.unavailableOps;
    if (unavailable && seq.calls.some((c) => unavailable.has(c.op))) continue;
    if (constraint && constraint !== info.kind && constraint !== info.id) continue;
    const supports = w.device.supports?.bind(w.device);
    const takes = (c: SequenceCall, s: number): boolean =>
      supports!(
        c.op,
        c.tensors.map((t) => t.desc),
        c.scalars,
        sequenceStepImpl(impl, s),
      );
    if (supports && !seq.calls.every(takes)) continue;
    out.push(w.index);
  }
  return out;
}
