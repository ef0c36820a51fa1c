/** Validation of `rt.submit` requests: everything is checked before anything is recorded. */
import { TandemError } from '../core/errors.js';
import type { Scalars, ScalarValue, TensorDesc } from '../devices/device.js';
import type { Cost, KernelDef } from '../kernels/kernel.js';
import type { Tensor } from '../memory/tensor.js';
import type { ShareGroup } from './shares.js';
import { Task } from './task.js';
import type { TaskHandle } from './task.js';

export interface SubmitRequest {
  readonly kernel: string;
  readonly args?: Readonly<Record<string, Tensor>>;
  readonly scalars?: Readonly<Record<string, ScalarValue>>;
  /** Higher runs first under priority-aware policies. */
  readonly priority?: number;
  /** A device kind ('cpu', 'cuda', 'webgpu') or id ('cuda0') the task must run on. */
  readonly device?: string;
  readonly deps?: readonly TaskHandle[];
  readonly name?: string;
  /** Labels carried into trace events (job id, tenant). */
  readonly tags?: Readonly<Record<string, string>>;
  /**
   * The share group whose device time this task is charged to (a name, or a group of this runtime's
   * `shares`): eager and prio give free devices to the group most behind per weight. Default: none.
   */
  readonly share?: string | ShareGroup;
}

export interface ValidatedSubmit {
  readonly tensors: readonly Tensor[];
  readonly scalars: Scalars;
  readonly priority: number;
  readonly constraint: string | null;
  readonly deps: readonly Task[];
  readonly cost: Cost;
}

interface RuntimeView {
  checkTensor(t: unknown, what: string): asserts t is Tensor;
  readonly devices: ReadonlyArray<{ readonly info: { readonly id: string; readonly kind: string } }>;
}

/**
 * Shared, frozen stand-ins for what most tiny tasks leave out (no tensors, no scalars, no deps): a
 * submission then allocates nothing here that the task keeps.
 */
const EMPTY: Readonly<Record<string, never>> = Object.freeze({});
const NO_TENSORS: readonly Tensor[] = Object.freeze([]);
const NO_DEPS: readonly Task[] = Object.freeze([]);
const ZERO_COST: Cost = Object.freeze({ flops: 0, bytes: 0 });

function bad(msg: string, details: Record<string, unknown> = {}): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', msg, details);
}

/** Built only for an error message, not once per task. */
function what(def: KernelDef): string {
  return `submit(${def.name})`;
}

export function validateSubmit(rt: RuntimeView, def: KernelDef, req: SubmitRequest): ValidatedSubmit {
  const args = req.args ?? EMPTY;
  if (typeof args !== 'object' || args === null) throw bad(`${what(def)}: args must be an object of tensors`);
  // for-in over own keys (as Object.keys/entries, in the same order) allocates no array per task.
  if (args !== EMPTY)
    for (const name in args) {
      if (Object.hasOwn(args, name) && !def.args.some((a) => a.name === name)) {
        throw bad(
          `${what(def)}: unknown argument ${JSON.stringify(name)}; expected ${def.args.map((a) => a.name).join(', ') || 'none'}`,
        );
      }
    }
  let tensors = NO_TENSORS;
  let descs: Record<string, TensorDesc> = EMPTY;
  if (def.args.length > 0) {
    const list: Tensor[] = [];
    descs = {};
    for (const spec of def.args) {
      const t = args[spec.name];
      if (t === undefined) throw bad(`${what(def)}: missing tensor argument ${JSON.stringify(spec.name)}`);
      rt.checkTensor(t, `${what(def)} argument ${spec.name}`);
      list.push(t);
      descs[spec.name] = t.desc;
    }
    tensors = list;
  }
  const scalars = req.scalars ?? EMPTY;
  if (typeof scalars !== 'object' || scalars === null || Array.isArray(scalars))
    throw bad(`${what(def)}: scalars must be an object`);
  if (scalars !== EMPTY)
    for (const k in scalars) {
      if (!Object.hasOwn(scalars, k)) continue;
      const v = scalars[k];
      const ok =
        (typeof v === 'number' && !Number.isNaN(v)) || typeof v === 'boolean' || typeof v === 'string';
      if (!ok) throw bad(`${what(def)}: scalar ${k} must be a number, boolean or string`);
    }
  def.validate(descs, scalars);
  const priority = req.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isFinite(priority))
    throw bad(`${what(def)}: priority must be a finite number`);
  let constraint: string | null = null;
  if (req.device !== undefined) {
    if (typeof req.device !== 'string') throw bad(`${what(def)}: device must be a string`);
    if (!rt.devices.some((d) => d.info.kind === req.device || d.info.id === req.device)) {
      throw new TandemError(
        'TANDEM_ERR_NO_DEVICE',
        `${what(def)}: no device ${JSON.stringify(req.device)} is open`,
        {
          devices: rt.devices.map((d) => d.info.id),
        },
      );
    }
    constraint = req.device;
  }
  let deps = NO_DEPS;
  const given = req.deps;
  if (Array.isArray(given)) {
    // Used as given (only read during this submit): no copy per task.
    for (let i = 0; i < given.length; i++)
      if (!(given[i] instanceof Task)) throw bad(`${what(def)}: deps must be tasks returned by submit`);
    deps = given as readonly Task[];
  } else if (given !== undefined) {
    const list: Task[] = [];
    for (const d of given) {
      if (!(d instanceof Task)) throw bad(`${what(def)}: deps must be tasks returned by submit`);
      list.push(d);
    }
    deps = list;
  }
  const cost = def.cost(descs, scalars);
  // Tasks that cost nothing (barriers, empty tasks) share one record instead of keeping one each.
  const shared = cost.flops === 0 && cost.bytes === 0 ? ZERO_COST : cost;
  return { tensors, scalars, priority, constraint, deps, cost: shared };
}
